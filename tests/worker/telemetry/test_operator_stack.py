"""Metrics and logs that fit an operator's stack, read from a real ``toolcalls worker`` process: its
``/metrics`` names the service, ends counters in one ``_total`` and has the error, truncation and
refusal counters at zero before anything happened; its log leaves out core's routine warning
about a query its client gave up on."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from tests.support.harness import pending_approval
from tests.worker.support import Spawn, free_port, write_config
from tests.worker.telemetry.support import Samples, label_values, scrape, settled, total
from tests.worker.telemetry.test_metrics import APPROVE, start_worker, stop
from toolcalls.worker.telemetry.runtime import CORE_LOGGER, RoutineCoreLines
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import ErrorCode, ToolCallRequest
from toolcalls.workflows.reach.client import ToolCallClient

TOOLS = ("calculator", "list_files", "create_file")
KNOWN_CODES = {code.value for code in ErrorCode} - {ErrorCode.UNKNOWN_TOOL.value}
QUERY_EXPIRED = "Query not found when attempting to respond to it"
ATTEMPTS = 10
"""Tries at making a query expire while the worker holds it (each takes about a second)."""


def config(tmp_path: Path, task_queue: str, extra: str = "", worker: str = "") -> Path:
    root = tmp_path / "files"
    (root / "few").mkdir(parents=True)
    for index in range(3):
        (root / "few" / f"{index}.txt").write_text("x", encoding="utf-8")
    tools = ", ".join(f'"{tool}"' for tool in TOOLS)
    return write_config(
        tmp_path,
        f'task_queue = "{task_queue}"\ntools = [{tools}]\n{extra}'
        f"[worker]\ngraceful_shutdown_seconds = 5\n{worker}"
        "[payloads]\nmax_result_bytes = 1024\n"
        f'[files]\nroots = ["{root}"]\ncheckpoints = "{tmp_path / "checkpoints.db"}"\n',
    )


def series(samples: Samples, name: str, **labels: str) -> list[float]:
    """The values of every series of ``name`` carrying ``labels``."""
    wanted = set(labels.items())
    return [value for (n, have), value in samples.items() if n == name and wanted <= have]


async def test_metrics_name_the_service_end_in_one_total_and_start_at_zero(
    tmp_path: Path, spawn: Spawn, address: str, client: Client
) -> None:
    task_queue = f"stack-{uuid.uuid4()}"
    port = free_port()
    worker = start_worker(
        spawn,
        config(tmp_path, task_queue, '[telemetry]\nservice_name = "tools-eu"\n'),
        address,
        port,
    )
    before = await scrape(port)
    assert label_values(before, "temporal_worker_start_total", "service_name") == {"tools-eu"}

    errors = "toolcalls_call_errors_total"
    for tool in TOOLS:
        for code in KNOWN_CODES:
            assert series(before, errors, tool=tool, code=code, task_queue=task_queue) == [0], (
                tool,
                code,
            )
    assert label_values(before, errors, "code") == KNOWN_CODES
    truncated, refused = "toolcalls_results_truncated_total", "toolcalls_payloads_refused_total"
    # Only a tool whose result can say it was cut counts truncations.
    assert label_values(before, truncated, "tool") == {"list_files"}
    assert series(before, refused, tool="calculator", what="result") == [0]
    assert series(before, refused, tool="create_file", what="preview") == [0]
    assert series(before, refused, tool="list_files", what="preview") == []
    for name in (errors, truncated, refused):
        assert label_values(before, name, "tool") <= set(TOOLS), name

    tools = ToolCallClient(client, task_queue=task_queue)
    failed = await tools.call(ToolCallRequest(tool="calculator", arguments={"expression": "1/0"}))
    assert failed.error is not None
    assert failed.error.code == "execution_failed"
    cut = await tools.call(
        ToolCallRequest(
            tool="list_files",
            arguments={"path": str(tmp_path / "files" / "few"), "max_results": 1},
        )
    )
    assert cut.output is not None
    assert cut.output["truncated"] is True
    large = await tools.call(
        ToolCallRequest(
            tool="create_file",
            arguments={"path": str(tmp_path / "files" / "large.txt"), "content": "y" * 4096},
        )
    )
    assert large.error is not None
    assert large.error.code == "output_too_large"
    after = await settled(port, errors, 2)
    # The first error moved the series that was at zero: there is no second one to miss it.
    assert series(after, errors, tool="calculator", code="execution_failed") == [1]
    assert series(after, errors, tool="create_file", code="output_too_large") == [1]
    assert series(after, truncated, tool="list_files") == [1]
    assert series(after, refused, tool="create_file", what="preview") == [1]
    assert total(after, errors) == 2

    names = {name for name, _ in after}
    assert not [name for name in names if name.endswith("_total_total")]
    # The plan ran the calculator as a local activity: the SDK's counter named ..._total.
    assert total(after, "temporal_local_activity_total", task_queue=task_queue) >= 1
    assert total(after, "temporal_workflow_completed_total", task_queue=task_queue) == 3
    assert label_values(after, "toolcalls_calls_total", "service_name") == {"tools-eu"}
    assert all(dict(labels).get("service_name") == "tools-eu" for _, labels in after)
    stop(worker)


async def test_the_service_name_is_toolcalls_by_default(
    tmp_path: Path, spawn: Spawn, address: str
) -> None:
    port = free_port()
    worker = start_worker(spawn, config(tmp_path, f"name-{uuid.uuid4()}"), address, port)
    samples = await scrape(port)
    assert {dict(labels).get("service_name") for _, labels in samples} == {"toolcalls"}
    stop(worker)


async def test_a_query_its_client_gave_up_on_leaves_no_warning_in_the_log(
    tmp_path: Path, spawn: Spawn, address: str, client: Client
) -> None:
    task_queue = f"query-{uuid.uuid4()}"
    port = free_port()
    # No cache: each query is a task of the workflow's own queue, which the worker always polls.
    cache_off = "max_cached_workflows = 0\n"
    worker = start_worker(spawn, config(tmp_path, task_queue, worker=cache_off), address, port)
    tools = ToolCallClient(client, task_queue=task_queue)
    waiting = await tools.start(
        ToolCallRequest(tool="calculator", arguments={"expression": "1"}, policy=APPROVE)
    )
    await pending_approval(waiting)
    handle = client.get_workflow_handle(waiting.id)
    # The worker, stopped, holds the query task the server gave its waiting poll; the client
    # gives up; the worker, continued, answers a query the server has forgotten.
    for _ in range(ATTEMPTS):
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            with pytest.raises(RPCError):
                await handle.query(ToolCallWorkflow.status, rpc_timeout=timedelta(seconds=1))
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        if await answered_too_late(port):
            break
    else:
        raise AssertionError("no query expired while the worker held it")
    stop(worker)
    log = "".join(worker.stderr)
    assert "polling task queue" in log
    assert QUERY_EXPIRED not in log


async def answered_too_late(port: int, timeout: float = 5) -> bool:
    """Whether the worker answered a query the server no longer had (core counts the refusal)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        samples = await scrape(port)
        failed = total(
            samples,
            "temporal_request_failure_total",
            operation="RespondQueryTaskCompleted",
            status_code="NOT_FOUND",
        )
        if failed:
            return True
        await asyncio.sleep(0.2)
    return False


def core_record(message: str, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.getLogger(CORE_LOGGER).makeRecord(
        CORE_LOGGER, level, "(sdk-core)", 0, message, (), None
    )


def test_routine_core_warnings_are_debug_lines_and_others_stay() -> None:
    quiet = RoutineCoreLines()
    logger = logging.getLogger(CORE_LOGGER)
    saved = logger.level
    try:
        logger.setLevel(logging.INFO)
        routine = core_record(f"{QUERY_EXPIRED} error=Status {{ code: NotFound }}")
        assert not quiet.filter(routine)
        other = core_record("Network error while responding to legacy query")
        assert quiet.filter(other)
        assert other.levelno == logging.WARNING
        logger.setLevel(logging.DEBUG)
        shown = core_record(QUERY_EXPIRED)
        assert quiet.filter(shown)
        assert (shown.levelno, shown.levelname) == (logging.DEBUG, "DEBUG")
    finally:
        logger.setLevel(saved)
