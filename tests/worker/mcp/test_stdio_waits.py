"""What happens while an MCP call waits: questions asked through the client, cancellation from
the client, retries and reconnects with an idempotency key, and a deployment with no worker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from temporalio.client import Client

from tests.support.processes import eventually, live_members
from tests.worker.mcp.support import (
    Deployment,
    Open,
    Recorder,
    accept,
    keyed,
    stdio_session,
    text_of,
    workflow_of,
)
from tests.worker.support import command
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode


async def test_ask_user_is_answered_through_elicitation(session: Open, worker: None) -> None:
    recorder = Recorder(accept({"answer": "teal", "choice": "blue"}))
    question = {"question": "Which colour?", "options": ["red", "blue"]}
    async with session(recorder) as mcp:
        result = await mcp.call_tool("ask_user", question)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert result.structured_content["status"] == "answered"
    assert result.structured_content["answer"] == "teal"
    [form] = recorder.forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.message == "Which colour?"
    assert form.requested_schema["properties"]["choice"]["enum"] == ["red", "blue"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_ask_user_declined_or_cancelled_in_the_client_is_declined(
    session: Open, worker: None, action: str
) -> None:
    async def refuse(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action=action)

    async with session(Recorder(refuse)) as mcp:
        result = await mcp.call_tool("ask_user", {"question": "Proceed?", "options": None})
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert (result.structured_content["status"], result.structured_content["answer"]) == (
        "declined",
        None,
    )


async def test_cancelling_the_request_cancels_the_call_and_kills_the_process_group(
    session: Open, worker: None, deployment: Deployment, client: Client
) -> None:
    started = deployment.root / "started"
    script = f"echo $$ > {started}; sleep 100 & wait"
    async with session() as mcp:
        with anyio.CancelScope() as scope:

            async def cancel_once_running() -> None:
                await eventually(lambda: started.exists() and started.read_text().strip() != "")
                scope.cancel()

            canceller = asyncio.ensure_future(cancel_once_running())
            await mcp.call_tool("run_shell", {"command": script})
        await canceller
        assert scope.cancelled_caught
        pgid = int(started.read_text())
        await eventually(lambda: live_members(pgid) == [], timeout=30, what="the group killed")
    [workflow_id] = await calls_on(client, deployment.task_queue)
    result = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    # run_shell is a write: canceled while it ran, its effect may have begun.
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.message == (
        "run_shell: canceled; the process group was killed; no exit status; "
        "the effect may have begun: inspect before calling again"
    )


async def calls_on(client: Client, task_queue: str, count: int = 1) -> list[str]:
    """The ids of the calls started on ``task_queue``, once visibility lists ``count``."""
    query = f'WorkflowType = "ToolCallWorkflow" AND TaskQueue = "{task_queue}"'
    for _ in range(100):
        found = [wf.id async for wf in client.list_workflows(query)]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"visibility never listed {count} calls on {task_queue}")


async def test_a_retried_request_with_the_same_key_gets_the_same_call(
    session: Open, worker: None, deployment: Deployment, client: Client
) -> None:
    log = deployment.root / "runs.log"
    call = ("run_shell", {"command": f"echo ran >> {log}; cat {log}"})
    key = keyed("retry")
    async with session() as mcp:
        first = await mcp.call_tool(*call, meta=key)
        again = await mcp.call_tool(*call, meta=key)
        other = await mcp.call_tool(*call, meta=keyed("other"))
    assert not first.is_error, text_of(first)
    assert again.structured_content == first.structured_content
    assert workflow_of(again) == workflow_of(first)
    assert workflow_of(other) != workflow_of(first)
    assert log.read_text() == "ran\nran\n"  # the retry ran nothing; the other key ran once
    assert len(await calls_on(client, deployment.task_queue, 2)) == 2


async def test_a_key_reused_for_other_arguments_is_refused(session: Open, worker: None) -> None:
    key = keyed("reuse")
    async with session() as mcp:
        first = await mcp.call_tool("calculator", {"expression": "1 + 1"}, meta=key)
        assert not first.is_error
        with pytest.raises(MCPError) as refused:
            await mcp.call_tool("calculator", {"expression": "2 + 2"}, meta=key)
    assert refused.value.error.code == types.INVALID_PARAMS
    assert "is already a call of calculator with other arguments" in refused.value.error.message


async def test_a_client_that_disconnects_gets_the_result_with_its_key_later(
    session: Open, worker: None, tmp_path: Path, address: str
) -> None:
    key = keyed("reconnect")
    call = ("set_value", {"key": "k", "value": "1"})
    recorder = Recorder()
    async with session() as mcp:
        waiting = asyncio.ensure_future(
            mcp.call_tool(*call, meta=key, progress_callback=recorder.on_progress)
        )
        workflow_id = await recorder.workflow_id()
    # The client and its server process are gone; the call waits on in Temporal.
    with pytest.raises(MCPError, match="Connection closed"):
        waiting.result()
    approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
    assert approved.code == 0, approved.stderr
    async with session() as mcp:
        result = await mcp.call_tool(*call, meta=key)
    assert not result.is_error, text_of(result)
    assert workflow_of(result) == workflow_id
    assert result.structured_content is not None
    assert result.structured_content["created"] is True


async def test_without_a_worker_a_call_fails_at_once_and_nothing_starts(
    tmp_path: Path, address: str, deployment: Deployment, client: Client
) -> None:
    async with stdio_session(tmp_path, address, deployment.path) as mcp:
        result = await mcp.call_tool("calculator", {"expression": "1"})
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == ErrorCode.TOOL_UNAVAILABLE.value
    assert result.structured_content["error"]["retryable"] is True
    assert (
        f"no toolcalls worker is serving task queue {deployment.task_queue!r}; nothing was started"
        in text_of(result)
    )
    stderr = (tmp_path / "mcp-stderr.log").read_text()
    assert f"no toolcalls worker is serving task queue {deployment.task_queue!r}" in stderr
    query = f'TaskQueue = "{deployment.task_queue}"'
    assert [wf async for wf in client.list_workflows(query)] == []


async def test_an_unknown_tool_is_a_protocol_error(session: Open, worker: None) -> None:
    async with session() as mcp:
        with pytest.raises(MCPError) as refused:
            await mcp.call_tool("format_disk", {})
    assert refused.value.error.code == types.INVALID_PARAMS
    assert refused.value.error.message.startswith("unknown tool 'format_disk'; available: ")
