"""Writes that need approval through ``toolcalls mcp`` over stdio: decided from the CLI while the
MCP call waits, or in the client itself when the deployment allows it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as types
from temporalio.client import Client

from tests.support.harness import running_worker
from tests.worker.mcp.support import USER, Deployment, Open, Recorder, accept, text_of, workflow_of
from tests.worker.support import command
from toolcalls.worker.config import load_config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus
from toolcalls.workflows.reach.client import ToolCallClient

SET = ("set_value", {"key": "colour", "value": '"blue"'})


async def test_approved_from_the_cli_while_the_call_waits(
    session: Open, worker: None, tmp_path: Path, address: str, client: Client
) -> None:
    recorder = Recorder()
    async with session() as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert (result.structured_content["key"], result.structured_content["created"]) == (
        "colour",
        True,
    )
    waiting = [m for m in recorder.progress if m.startswith("waiting for approval")]
    link = f"http://localhost:8233/namespaces/default/workflows/{workflow_id}"
    assert waiting[0] == (
        f"waiting for approval by anyone; decide at {link} or: toolcalls approve {workflow_id}"
    )
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
    recorded = await handle.result()
    assert recorded.approval is not None
    assert recorded.approval.approver == "alice"


async def test_a_waiting_call_names_the_client_and_its_user(
    session: Open, worker: None, tmp_path: Path, address: str, client: Client
) -> None:
    # What the inbox shows as who asked: the memo records it, so the list needs no history.
    recorder = Recorder()
    desk = types.Implementation(name="Ops  Desk\n", version="1.2")
    async with session(client_info=desk) as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        calls = ToolCallClient(
            client, task_queue=load_config(tmp_path / "toolcalls.toml").task_queue
        )
        expected = {"front": "mcp", "mcp_user": USER, "mcp_client": "Ops Desk"}
        assert (await calls.status(workflow_id)).metadata == expected
        for _ in range(100):
            found = [c for c in await calls.pending() if c.workflow_id == workflow_id]
            if found:
                break
            await asyncio.sleep(0.2)
        assert [c.metadata for c in found] == [expected]
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error, text_of(result)


async def test_denied_from_the_cli_gives_the_typed_error(
    session: Open, worker: None, tmp_path: Path, address: str
) -> None:
    recorder = Recorder()
    async with session() as mcp:
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


async def test_approved_through_elicitation_when_the_deployment_allows_it(
    session: Open, worker: None, deployment: Deployment, client: Client
) -> None:
    deployment.write("approve_via_elicitation = true")
    recorder = Recorder(accept({"decision": "approve", "reason": "fine by me"}))
    async with session(recorder) as mcp:
        result = await mcp.call_tool(*SET, progress_callback=recorder.on_progress)
    assert not result.is_error, text_of(result)
    [form] = recorder.forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.message.startswith("Approve this set_value call?")
    assert '"key": "colour"' in form.message
    assert "capabilities: storage.write" in form.message
    assert form.requested_schema["required"] == ["decision"]
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_of(result))
    recorded = await handle.result()
    assert recorded.status is CallStatus.COMPLETED
    assert recorded.approval is not None
    assert (recorded.approval.approver, recorded.approval.reason) == (USER, "fine by me")


async def test_not_asked_in_the_client_when_the_deployment_does_not_allow_it(
    session: Open, worker: None, tmp_path: Path, address: str
) -> None:
    recorder = Recorder(accept({"decision": "approve"}))
    async with session(recorder) as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        await asyncio.sleep(2)  # several status polls: none may ask
        assert recorder.forms == []
        assert not call.done()
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error
    assert recorder.forms == []


async def test_an_mcp_user_the_approvers_do_not_name_is_not_asked(
    session: Open, client: Client, deployment: Deployment, tmp_path: Path, address: str
) -> None:
    deployment.write(
        "approve_via_elicitation = true",
        extra='[approvers.rules."storage.write"]\napprovers = ["alice"]',
    )
    recorder = Recorder(accept({"decision": "approve"}))
    async with running_worker(client, load_config(deployment.path)), session(recorder) as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        assert any(m.startswith("waiting for approval by alice;") for m in recorder.progress)
        await asyncio.sleep(2)  # several status polls: none may ask
        assert recorder.forms == []
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error, text_of(result)
    assert recorder.forms == []


async def test_a_form_decided_elsewhere_is_withdrawn_from_the_client(
    session: Open, worker: None, deployment: Deployment, tmp_path: Path, address: str
) -> None:
    deployment.write("approve_via_elicitation = true")
    shown, withdrawn = asyncio.Event(), asyncio.Event()

    async def hold(params: types.ElicitRequestParams) -> types.ElicitResult:
        shown.set()
        try:
            await asyncio.sleep(120)
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return types.ElicitResult(action="cancel")

    recorder = Recorder(hold)
    async with session(recorder) as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        await asyncio.wait_for(shown.wait(), 30)
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
        await asyncio.wait_for(withdrawn.wait(), 30)
    assert not result.is_error, text_of(result)
