"""Inline calls under test: the deployment's ``[inline]`` keys, the application's worker running
the parent, and polling a parent's inline calls the way a client sees them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from tests.support.harness import make_config
from tests.support.parents import AgentParent, ParentInput, ParentOutput, StepParent
from tests.support.payloads import keys
from toolcalls.worker.config import Config
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.call import CallState
from toolcalls.workflows.models.views import CallNotFound, CallView, PendingCall
from toolcalls.workflows.reach.client import ToolCallClient

KEYS_ENV = "TOOLCALLS_TEST_INLINE_KEYS"

ParentHandle = WorkflowHandle[AgentParent, ParentOutput]


def inline_config(
    task_queue: str, monkeypatch: pytest.MonkeyPatch | None, **sections: Any
) -> Config:
    """A test deployment on ``task_queue``; with ``monkeypatch``, it has ``[attestation]`` keys."""
    if monkeypatch is not None:
        monkeypatch.setenv(KEYS_ENV, keys("i2", "i1"))
        sections["attestation"] = {"keys_env": KEYS_ENV}
    return make_config(task_queue, **sections)


@asynccontextmanager
async def app_worker(
    client: Client, queue: str | None = None, **options: Any
) -> AsyncIterator[str]:
    """The application's own worker, on its own queue (a fresh one by default), running the
    parents in the isolated sandbox."""
    queue = queue or f"app-{uuid.uuid4()}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[AgentParent, StepParent],
        workflow_runner=sandbox_runner(),
        **options,
    ):
        yield queue


async def start_parent(
    client: Client, queue: str, input: ParentInput, workflow_id: str | None = None
) -> ParentHandle:
    return await client.start_workflow(
        AgentParent.run, input, id=workflow_id or f"parent-{uuid.uuid4()}", task_queue=queue
    )


async def listed(calls: ToolCallClient, workflow_id: str, timeout: float = 20) -> PendingCall:
    """Poll ``pending()`` (visibility is eventually consistent) until it lists ``workflow_id``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = [call for call in await calls.pending() if call.workflow_id == workflow_id]
        if found:
            return found[0]
        if loop.time() > deadline:
            raise AssertionError(f"{workflow_id} never listed as pending")
        await asyncio.sleep(0.2)


async def viewed(
    calls: ToolCallClient,
    workflow_id: str,
    predicate: Callable[[CallState], bool],
    timeout: float = 20,
) -> CallView:
    """Poll ``status()`` until the call's state satisfies ``predicate``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: CallView | None = None
    while True:
        try:
            last = await calls.status(workflow_id)
        except CallNotFound:
            last = None
        if last is not None and predicate(last.state):
            return last
        if loop.time() > deadline:
            raise AssertionError(f"{workflow_id}: condition not reached; last {last}")
        await asyncio.sleep(0.1)
