"""Durability: calls survive lost workers and a restarted server; cancellation; lost writes."""

from __future__ import annotations

import asyncio
import gc
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.support.harness import (
    Handle,
    decision,
    history_types,
    make_config,
    pending_approval,
    pending_question,
    running_worker,
    signal_decision,
    start_call,
    wait_for,
    worker_process,
)
from tests.support.tools import ProbeTools
from toolcalls.worker.devserver import DevServer
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import ApprovalRequest
from toolcalls.workflows.models.call import (
    MEMO_PENDING_APPROVAL,
    MEMO_PENDING_QUESTION,
    SEARCH_STATUS,
    CallStatus,
    ErrorCode,
    EventKind,
    Phase,
)

ALLOW_ALL = {"ceiling": {"default_effect": "allow"}}
SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
TIMER_FIRED = EventType.EVENT_TYPE_TIMER_FIRED
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
CANCEL_REQUESTED = EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED
ACTIVITY_TIMED_OUT = EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT


async def test_signal_sent_while_no_worker_runs(client: Client, task_queue: str) -> None:
    config = make_config(task_queue)
    async with running_worker(client, config):
        handle = await start_call(client, task_queue, "probe_write", {"token": "a"})
        pending = await pending_approval(handle)

    # The stopped worker dropped the waiting workflow; closing its coroutines outside any
    # workflow must not raise (a ``finally`` that read the workflow clock used to).
    unraisable: list[BaseException | None] = []
    previous, sys.unraisablehook = sys.unraisablehook, lambda u: unraisable.append(u.exc_value)
    try:
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert unraisable == []

    await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, "bob"))
    assert SIGNALED in await history_types(handle)
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "awaiting_approval"

    async with running_worker(client, config) as probes:
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert (result.approval.approver, result.approval.via) == ("bob", "signal")
    assert result.output["approved_by"] == "bob"
    assert probes.runs == {"probe_write": 1}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def dev_server(db_file: Path, port: int) -> AsyncIterator[Client]:
    """A dev server of our own on ``db_file``, and a client of it; stopped on exit."""
    server = DevServer(db_file, port=port, ui_port=None)
    server.start()
    try:
        await server.wait_ready()
        yield await Client.connect(server.address, data_converter=pydantic_data_converter)
    finally:
        server.stop()


async def test_approval_survives_a_server_restart(tmp_path: Path, task_queue: str) -> None:
    db_file, port = tmp_path / "temporal.db", free_port()
    config = make_config(task_queue)
    async with dev_server(db_file, port) as client, running_worker(client, config):
        started = await start_call(client, task_queue, "probe_write", {"token": "b"})
        pending = await pending_approval(started)

    async with dev_server(db_file, port) as client:
        handle: Handle = client.get_workflow_handle_for(ToolCallWorkflow.run, started.id)
        # The restarted server alone (no worker yet) still shows what waits for whom.
        description = await handle.describe()
        assert description.status is WorkflowExecutionStatus.RUNNING
        memo = await description.memo_value(MEMO_PENDING_APPROVAL, type_hint=ApprovalRequest)
        assert memo == pending
        async with running_worker(client, config) as probes:
            record = await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
            result = await asyncio.wait_for(handle.result(), 30)
    assert record.approved
    assert result.status is CallStatus.COMPLETED
    assert result.approval == record
    assert result.output["idempotency_key"] == f"{started.id}:{started.id}"
    assert probes.runs == {"probe_write": 1}


async def test_approval_timer_fires_after_a_server_restart(tmp_path: Path, task_queue: str) -> None:
    db_file, port = tmp_path / "temporal.db", free_port()
    config = make_config(task_queue)
    async with dev_server(db_file, port) as client, running_worker(client, config):
        started = await start_call(
            client, task_queue, "probe_write", {"token": "c"}, approval_timeout=timedelta(seconds=5)
        )
        pending = await pending_approval(started)
    # The request expires while the server is down.
    assert pending.expires_at is not None
    await asyncio.sleep((pending.expires_at - datetime.now(UTC)).total_seconds() + 0.5)

    async with dev_server(db_file, port) as client:
        handle: Handle = client.get_workflow_handle_for(ToolCallWorkflow.run, started.id)
        async with running_worker(client, config) as probes:
            result = await asyncio.wait_for(handle.result(), 30)
        types = await history_types(handle)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_TIMED_OUT
    assert result.approval is None
    assert result.waited_seconds >= 5
    assert TIMER_FIRED in types
    assert probes.runs == {}


async def test_cancel_running_activity_keeps_partial_output(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)) as probes:
        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 30})
        await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
        await asyncio.sleep(1.0)
        await handle.cancel()
        result = await asyncio.wait_for(handle.result(), 20)
    # probe_sleep is a write: canceled while it ran, its effect may have begun.
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert result.error.message == (
        "probe_sleep: canceled; the effect may have begun: inspect before calling again"
    )
    assert isinstance(result.output, dict)
    assert 0 < result.output["ticks"] < 300  # partial: the full run is 300 ticks
    assert result.run_seconds >= 1
    assert probes.runs == {"probe_sleep": 1}
    assert CANCEL_REQUESTED in await history_types(handle)
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "uncertain"


async def test_a_write_that_undid_its_change_when_canceled_ends_canceled(
    client: Client, task_queue: str
) -> None:
    """A write tool that stopped before its effect and says so (``changed: false``, as a file
    write canceled before its swap does): the call ends ``canceled`` with the tool's words."""
    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)) as probes:
        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 30, "undo": True})
        await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
        await asyncio.sleep(1.0)
        await handle.cancel()
        result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.code is ErrorCode.CANCELED
    assert result.error.message == "probe_sleep: canceled; undone, nothing was changed"
    assert isinstance(result.output, dict)
    assert result.output["changed"] is False
    assert probes.runs == {"probe_sleep": 1}
    assert CANCEL_REQUESTED in await history_types(handle)
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "canceled"


async def test_cancel_while_waiting_for_a_question(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "ask_user", {"question": "Which format?"})
        await pending_question(handle)
        await asyncio.sleep(0.3)
        await handle.cancel()
        result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.code is ErrorCode.CANCELED
    assert result.output is None
    assert result.waited_seconds > 0
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "canceled"
    assert MEMO_PENDING_QUESTION not in await description.memo()


async def test_cancel_while_the_preview_is_prepared(client: Client, task_queue: str) -> None:
    probes = ProbeTools()
    probes.prepare_delay = 1.5
    async with running_worker(client, make_config(task_queue), probes):
        handle = await start_call(client, task_queue, "probe_write", {"token": "d"})
        await wait_for(handle, lambda s: s.phase is Phase.PREPARING)
        await handle.cancel()
        # The prepare step does not heartbeat, so it finishes; the call must still stop there
        # instead of asking for an approval nobody wants any more.
        result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.code is ErrorCode.CANCELED
    assert EventKind.APPROVAL_REQUESTED not in [e.kind for e in result.events]
    assert probes.runs == {}
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "canceled"
    assert MEMO_PENDING_APPROVAL not in await description.memo()


WORKER_SCRIPT = """
import asyncio, sys
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from tests.support.harness import make_config, running_worker
from tests.support.tools import ProbeTools

address, queue, started_log = sys.argv[1:4]

class Recorded(ProbeTools):
    async def probe_sleep(self, args, call):
        with open(started_log, "a") as log:
            log.write(call.idempotency_key + "\\n")
        return await super().probe_sleep(args, call)

async def main():
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    config = make_config(
        queue, ceiling={"default_effect": "allow"}, worker={"max_cached_workflows": 0}
    )
    async with running_worker(client, config, Recorded()):
        await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_write_whose_worker_dies_is_uncertain_and_never_rerun(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    started_log = tmp_path / "started.log"
    async with worker_process(WORKER_SCRIPT, client, task_queue, str(started_log)) as process:
        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 20})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not started_log.exists():
            assert process.returncode is None, "the worker process exited"
            assert loop.time() < deadline, "the tool never started"
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)

    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)) as probes:
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert "heartbeat timeout" in result.error.message
    assert "inspect before calling again" in result.error.message
    assert result.run_seconds > 0
    # Exactly one run across both workers: the new worker never got the task again.
    assert started_log.read_text().splitlines() == [f"{handle.id}:{handle.id}"]
    assert probes.runs == {}
    history = await handle.fetch_history()
    types = [event.event_type for event in history.events]
    assert (types.count(SCHEDULED), types.count(ACTIVITY_TIMED_OUT)) == (1, 1)
    (started_event,) = [
        e for e in history.events if e.HasField("activity_task_started_event_attributes")
    ]
    assert started_event.activity_task_started_event_attributes.attempt == 1
