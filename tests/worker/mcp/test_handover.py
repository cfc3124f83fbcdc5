"""Approvals handed to a person: with ``[mcp] inbox_url``, a waiting approval reaches the client as
a URL-mode elicitation opening the call's page in the inbox, at both protocol revisions without
Tasks, and the client's "accept" of it is never an approval."""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as types
from temporalio.client import Client

from tests.worker.mcp.support import (
    Deployment,
    Recorder,
    accept,
    http_session,
    serve_http,
    text_of,
    workflow_of,
)
from tests.worker.mcp.test_stdio_calls import modern_client
from tests.worker.support import Spawn, command
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import Phase
from toolcalls.workflows.reach.client import ToolCallClient

INBOX = "https://inbox.example.com/approvals"
SET = ("set_value", {"key": "colour", "value": '"blue"'})


async def still_waits(calls: ToolCallClient, workflow_id: str) -> None:
    """The call waits for an approval nobody has given."""
    state = (await calls.status(workflow_id)).state
    assert state.phase is Phase.AWAITING_APPROVAL
    assert state.pending_approval is not None
    assert state.pending_approval.approved_by == []


async def test_an_accepted_inbox_link_is_not_an_approval_over_http(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    worker: None,
    client: Client,
) -> None:
    deployment.write(f'inbox_url = "{INBOX}/"')
    url = serve_http(spawn, tmp_path, address, deployment)
    calls = ToolCallClient(client, task_queue=deployment.task_queue)
    recorder = Recorder(accept({}))
    async with http_session(url, recorder=recorder) as mcp:
        call = asyncio.ensure_future(mcp.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        page = f"{INBOX}/calls/{workflow_id}"
        for _ in range(100):
            if recorder.forms:
                break
            await asyncio.sleep(0.1)
        [link] = recorder.forms
        assert isinstance(link, types.ElicitRequestURLParams)
        assert link.url == page
        assert link.message.startswith("This set_value call waits for an approval by anyone")
        await asyncio.sleep(2)  # the accepted link had its chance to decide something
        assert not call.done()
        await still_waits(calls, workflow_id)
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error, text_of(result)
    waiting = [m for m in recorder.progress if m.startswith("waiting for approval")]
    assert waiting[0] == (
        f"waiting for approval by anyone; decide at {page} or: toolcalls approve {workflow_id}"
    )
    assert not any(":8233" in message for message in recorder.progress)
    recorded = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    assert recorded.approval is not None
    assert recorded.approval.approver == "alice"


async def test_an_accepted_inbox_link_is_not_an_approval_on_the_2026_protocol(
    tmp_path: Path, address: str, deployment: Deployment, worker: None, client: Client
) -> None:
    # The link comes back as the request's input_required result; the client's retry carries
    # its "accept", and the call goes on waiting for the inbox.
    deployment.write(f'inbox_url = "{INBOX}"')
    calls = ToolCallClient(client, task_queue=deployment.task_queue)
    recorder = Recorder(accept({}))
    async with modern_client(
        tmp_path, address, deployment, elicitation_callback=recorder.elicit
    ) as modern:
        assert modern.protocol_version == "2026-07-28"
        call = asyncio.ensure_future(modern.call_tool(*SET, progress_callback=recorder.on_progress))
        workflow_id = await recorder.workflow_id()
        for _ in range(100):
            if recorder.forms:
                break
            await asyncio.sleep(0.1)
        [link] = recorder.forms
        assert isinstance(link, types.ElicitRequestURLParams)
        assert link.url == f"{INBOX}/calls/{workflow_id}"
        await asyncio.sleep(2)
        assert not call.done()
        await still_waits(calls, workflow_id)
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error, text_of(result)
    assert workflow_of(result) == workflow_id
    assert len(recorder.forms) == 1  # the link is handed over once
