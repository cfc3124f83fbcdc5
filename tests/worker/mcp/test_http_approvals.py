"""Writes that wait for an approval through ``toolcalls mcp --http``: the SDK's own client over
streamable HTTP, decided from the CLI while the call waits, or in the client itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as types
from temporalio.client import Client

from tests.worker.mcp.support import (
    USER,
    Deployment,
    Recorder,
    accept,
    http_session,
    serve_http,
    text_of,
    workflow_of,
)
from tests.worker.support import Spawn, command
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus

SET = ("set_value", {"key": "colour", "value": '"blue"'})


async def test_a_call_over_http_waits_for_the_cli_to_approve_it(
    url: str, worker: None, tmp_path: Path, address: str, client: Client
) -> None:
    recorder = Recorder()
    async with http_session(url) as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        # Still waiting: the approval is what ends the wait, not a timeout of the transport.
        assert not call.done()
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert (result.structured_content["key"], result.structured_content["created"]) == (
        "colour",
        True,
    )
    assert workflow_of(result) == workflow_id
    link = f"http://localhost:8233/namespaces/default/workflows/{workflow_id}"
    waiting = [m for m in recorder.progress if m.startswith("waiting for approval")]
    assert waiting[0] == (
        f"waiting for approval by anyone; decide at {link} or: toolcalls approve {workflow_id}"
    )
    recorded = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    assert recorded.approval is not None
    assert (recorded.approval.approver, recorded.approval.via) == ("alice", "update")


async def test_a_call_over_http_denied_from_the_cli_gives_the_typed_error(
    url: str, worker: None, tmp_path: Path, address: str
) -> None:
    recorder = Recorder()
    async with http_session(url) as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        denied = await command(
            tmp_path, address, "deny", workflow_id, "--by", "alice", "--reason", "not now"
        )
        assert denied.code == 0, denied.stderr
        result = await asyncio.wait_for(call, 60)
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["status"] == "denied"
    error = result.structured_content["error"]
    assert error["code"] == "approval_denied"
    assert "not now" in error["message"]
    assert text_of(result).startswith(f"denied: approval_denied: {error['message']}")


async def test_a_call_over_http_is_approved_through_elicitation_when_allowed(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    worker: None,
    client: Client,
) -> None:
    deployment.write("approve_via_elicitation = true")
    endpoint = serve_http(spawn, tmp_path, address, deployment)
    recorder = Recorder(accept({"decision": "approve", "reason": "fine over http"}))
    async with http_session(endpoint, recorder=recorder) as mcp:
        result = await mcp.call_tool(*SET, progress_callback=recorder.on_progress)
    assert not result.is_error, text_of(result)
    [form] = recorder.forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.message.startswith("Approve this set_value call?")
    assert '"key": "colour"' in form.message
    assert form.requested_schema["required"] == ["decision"]
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_of(result))
    recorded = await handle.result()
    assert recorded.status is CallStatus.COMPLETED
    assert recorded.approval is not None
    assert (recorded.approval.approver, recorded.approval.reason) == (USER, "fine over http")
