"""Running real workers and calls against the session's dev server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client, WorkflowHandle

from tests.support.tools import ALL_TOOL_NAMES, ALL_TOOLS, ProbeTools
from worker.config import Config, parse_config
from worker.run import build_worker
from workflows.models import CallState, Phase, ToolCallRequest, ToolCallResult
from workflows.tool_call import ToolCallWorkflow

Handle = WorkflowHandle[ToolCallWorkflow, ToolCallResult]


def make_config(task_queue: str, **sections: Any) -> Config:
    """A config serving every builtin and probe tool on ``task_queue``."""
    data: dict[str, Any] = {"task_queue": task_queue, "tools": ALL_TOOL_NAMES}
    data.update(sections)
    return parse_config(data, "test config")


@asynccontextmanager
async def running_worker(
    client: Client,
    config: Config,
    probes: ProbeTools | None = None,
    **overrides: Any,
) -> AsyncIterator[ProbeTools]:
    """Run a worker for ``config`` (with every probe tool) for the duration of the block."""
    probes = probes or ProbeTools()
    worker = build_worker(client, config, specs=ALL_TOOLS, families={ProbeTools: probes})
    for key, value in overrides.items():
        setattr(worker, key, value)
    async with worker:
        yield probes


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
    """Poll the ``status`` query until ``predicate`` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        state = await handle.query(ToolCallWorkflow.status)
        if predicate(state):
            return state
        if loop.time() > deadline:
            raise AssertionError(f"condition not reached; last state {state.phase}")
        await asyncio.sleep(0.05)


async def wait_for_phase(handle: Handle, phase: Phase, timeout: float = 20) -> CallState:
    return await wait_for(handle, lambda s: s.phase is phase, timeout)
