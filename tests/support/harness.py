"""Running real workers and calls against the session's dev server."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from toolcalls.worker.config import Config, parse_config
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import ApprovalDecision, ApprovalRequest, DecisionInput
from toolcalls.workflows.models.call import (
    CallState,
    Phase,
    ToolCallRequest,
    ToolCallResult,
)
from toolcalls.workflows.models.question import (
    UserQuestion,
)

Handle = WorkflowHandle[ToolCallWorkflow, ToolCallResult]


def make_config(task_queue: str, **sections: Any) -> Config:
    """A config serving every builtin and probe tool on ``task_queue``.

    Test workers isolate the workflow code in the sandbox, so that a non-deterministic call slipped
    into it fails here even though production workers share the module.
    """
    data: dict[str, Any] = {"task_queue": task_queue, "tools": ALL_TOOL_NAMES}
    data.update(sections)
    data["worker"] = {"isolate_workflows": True, **data.get("worker", {})}
    return parse_config(data, "test config")


@asynccontextmanager
async def running_worker(
    client: Client,
    config: Config,
    probes: ProbeTools | None = None,
) -> AsyncIterator[ProbeTools]:
    """Run a worker for ``config`` (with every probe tool) for the duration of the block; its
    options are the config's ``[worker]`` section, as ``toolcalls worker`` would give them."""
    probes = probes or ProbeTools()
    worker = build_worker(client, config, families=ALL_FAMILIES, instances={ProbeTools: probes})
    async with worker:
        yield probes


PROJECT_ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def worker_process(
    script: str, client: Client, task_queue: str, *args: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -c SCRIPT ADDRESS TASK_QUEUE *ARGS`` in a session of its own, from the project's
    root: a worker the test can lose outright. Leaving the block kills its whole group with
    SIGKILL (no graceful shutdown, nothing flushed or reported) and waits for it."""
    address = client.service_client.config.target_host
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        address,
        task_queue,
        *args,
        cwd=PROJECT_ROOT,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        await asyncio.wait_for(process.wait(), 10)


async def start_call(
    client: Client,
    task_queue: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    **request: Any,
) -> Handle:
    return await client.start_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(tool=tool, arguments=arguments or {}, **request),
        id=f"call-{uuid.uuid4()}",
        task_queue=task_queue,
    )


async def run_call(
    client: Client,
    task_queue: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    **request: Any,
) -> ToolCallResult:
    handle = await start_call(client, task_queue, tool, arguments, **request)
    return await asyncio.wait_for(handle.result(), 60)


async def wait_for(
    handle: Handle, predicate: Callable[[CallState], bool], timeout: float = 20
) -> CallState:
    """Poll the ``status`` query until ``predicate`` holds (the call may not exist yet)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    state: CallState | None = None
    while True:
        try:
            state = await handle.query(ToolCallWorkflow.status)
        except RPCError as exc:
            if exc.status is not RPCStatusCode.NOT_FOUND:
                raise
        if state is not None and predicate(state):
            return state
        if loop.time() > deadline:
            last = state.phase if state else "not started"
            raise AssertionError(f"condition not reached; last state {last}")
        await asyncio.sleep(0.05)


async def heartbeat_recorded(handle: WorkflowHandle[Any, Any], timeout: float = 30) -> None:
    """Wait until the server holds a heartbeat of the call's running activity (the SDK sends
    heartbeats on its own schedule: a test that kills the worker waits for this first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        pending = (await handle.describe()).raw_description.pending_activities
        if any(activity.heartbeat_details.payloads for activity in pending):
            return
        assert loop.time() < deadline, "no heartbeat of the call's activity reached the server"
        await asyncio.sleep(0.05)


async def wait_for_phase(handle: Handle, phase: Phase, timeout: float = 20) -> CallState:
    return await wait_for(handle, lambda s: s.phase is phase, timeout)


async def pending_approval(handle: Handle, timeout: float = 20) -> ApprovalRequest:
    """The approval request the call publishes once it waits for a decision."""
    state = await wait_for(handle, lambda s: s.pending_approval is not None, timeout)
    assert state.pending_approval is not None
    return state.pending_approval


async def pending_question(handle: Handle, timeout: float = 20) -> UserQuestion:
    """The question an ``ask_user`` call publishes once it waits for an answer."""
    state = await wait_for(handle, lambda s: s.pending_question is not None, timeout)
    assert state.pending_question is not None
    return state.pending_question


async def history_types(handle: WorkflowHandle[Any, Any]) -> list[EventType.ValueType]:
    """The types of the events in the workflow's history, in order."""
    history = await handle.fetch_history()
    return [event.event_type for event in history.events]


async def update_rejection(handle: Handle, update: Any, arg: Any) -> str:
    """The reason an update's validator gives for refusing ``arg``."""
    try:
        await handle.execute_update(update, arg)
    except WorkflowUpdateFailedError as err:
        cause = err.cause
    else:
        raise AssertionError(f"the update accepted {arg!r}")
    assert isinstance(cause, ApplicationError), cause
    return cause.message


async def listed(
    client: Client, query: str, workflow_id: str, timeout: float = 20
) -> WorkflowExecution:
    """Poll visibility (eventually consistent) until ``query`` lists ``workflow_id``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = [
            wf async for wf in client.list_workflows(f'{query} AND WorkflowId="{workflow_id}"')
        ]
        if found:
            assert [wf.id for wf in found] == [workflow_id]
            return found[0]
        if loop.time() > deadline:
            raise AssertionError(f"{workflow_id} never listed by {query}")
        await asyncio.sleep(0.2)


def decision(
    pending: ApprovalRequest, approved: bool = True, approver: str = "alice", **changes: Any
) -> ApprovalDecision:
    """A ``decide`` update for ``pending``; ``changes`` overrides fields (a wrong digest, say)."""
    sent = ApprovalDecision(
        request_id=pending.request_id, digest=pending.digest, approved=approved, approver=approver
    )
    return sent.model_copy(update=changes)


def signal_decision(
    pending: ApprovalRequest, approver: str = "bob", reason: str | None = None, **changes: Any
) -> DecisionInput:
    """An ``approve``/``deny`` signal payload for ``pending``."""
    sent = DecisionInput(
        request_id=pending.request_id, digest=pending.digest, approver=approver, reason=reason
    )
    return sent.model_copy(update=changes)
