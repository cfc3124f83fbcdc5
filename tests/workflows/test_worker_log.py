"""What a worker logs when a tool fails: one line for an expected error, a traceback otherwise."""

from __future__ import annotations

import logging

import pytest
from temporalio.client import Client

from tests.support.harness import make_config, run_call, running_worker
from toolcalls.workflows.models.call import CallStatus, ErrorCode

SDK_FAILURE = "Completing activity as failed"


def lines_about(caplog: pytest.LogCaptureFixture, call_id: str) -> list[logging.LogRecord]:
    """The worker's lines about the call's failure; the workflow's line for the call's end
    (docs/observability.md) is another matter."""
    return [
        r for r in caplog.records if call_id in r.getMessage() and r.name != "temporalio.workflow"
    ]


def sdk_failures(caplog: pytest.LogCaptureFixture, tool: str) -> list[logging.LogRecord]:
    """The SDK's own failure records for ``tool``'s activity, at INFO or above."""
    return [
        r
        for r in caplog.records
        if r.getMessage().startswith(SDK_FAILURE)
        and r.levelno >= logging.INFO
        and f"'activity_type': '{tool}'" in r.getMessage()
    ]


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        # A local activity (calculator is pure) and a regular one.
        ("calculator", {"expression": "1 / 0"}, ErrorCode.EXECUTION_FAILED),
        ("probe_fail", {"code": "precondition_failed"}, ErrorCode.PRECONDITION_FAILED),
    ],
)
async def test_an_expected_tool_error_is_one_line(
    client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
    tool: str,
    arguments: dict[str, str],
    code: ErrorCode,
) -> None:
    call_id = f"toolu_{tool}_expected"
    caplog.set_level(logging.DEBUG)
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(client, task_queue, tool, arguments, call_id=call_id)
    assert result.status is not CallStatus.COMPLETED
    assert result.error is not None
    assert result.error.code is code
    assert sdk_failures(caplog, tool) == []
    [line] = lines_about(caplog, call_id)
    assert line.levelno == logging.INFO
    assert line.exc_info is None
    message = line.getMessage()
    assert message.startswith(f"{tool} call {call_id} (workflow {result.workflow_id}) failed: ")
    assert f": {code.value}: " in message
    assert "\n" not in message


async def test_an_unexpected_tool_error_keeps_its_traceback(
    client: Client, task_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(
            client, task_queue, "probe_boom", {"text": "bang"}, call_id="toolu_boom"
        )
    assert result.error is not None
    assert result.error.code is ErrorCode.INTERNAL
    [failure] = sdk_failures(caplog, "probe_boom")
    assert failure.levelno == logging.WARNING
    assert failure.exc_info is not None
    assert "boom: bang" in caplog.text
