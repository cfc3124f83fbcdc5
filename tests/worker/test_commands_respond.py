"""``toolcalls respond``: answer a waiting call in place of the tool, as real ``toolcalls``
processes against the session's dev server and a real worker."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import make_config, running_worker
from tests.worker.support import Done, command, pending_entry
from tests.worker.test_commands_approvals import started
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode

ANSWER = "Already done: see /srv/reports/q3.txt."


async def test_respond_ends_the_call_with_the_answer_and_the_tool_never_runs(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        workflow_id = await started(tmp_path, address, task_queue, "r1")
        request_id = (await pending_entry(tmp_path, address, workflow_id))["request_id"]
        blank = await command(tmp_path, address, "respond", workflow_id, "  ", "--by", "alice")
        assert blank == Done(2, "", "toolcalls respond: error: TEXT: a response cannot be blank\n")
        done = await command(tmp_path, address, "respond", workflow_id, ANSWER, "--by", "alice")
        assert done == Done(0, f"responded to {workflow_id} (request {request_id}) by alice\n", "")
        handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
        result = await asyncio.wait_for(handle.result(), 30)
        shown = await command(tmp_path, address, "show", workflow_id)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.RESPONDED
    assert result.response == ANSWER
    assert probes.runs == {}
    assert shown.code == 0, shown.stderr
    assert f"response: {ANSWER}" in shown.stdout
    assert "answered in place of the tool by alice via update" in shown.stdout


async def test_respond_where_the_deployment_forbids_it_is_rejected(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    config = make_config(task_queue, approvers={"respond": False})
    async with running_worker(client, config) as probes:
        workflow_id = await started(tmp_path, address, task_queue, "r2")
        await pending_entry(tmp_path, address, workflow_id)
        refused = await command(
            tmp_path, address, "respond", workflow_id, ANSWER, "--by", "alice", "--json"
        )
        assert refused.code == 1
        assert json.loads(refused.stdout)["delivery"] == "rejected"
        assert refused.stderr == (
            f"toolcalls: respond {workflow_id}: rejected: this deployment does not allow "
            "answering a call in place of the tool\n"
        )
        handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
        await handle.cancel()
    assert probes.runs == {}
