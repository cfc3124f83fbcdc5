"""``approve --edit`` / ``--remember``, ``grants list|revoke``, who may decide, and an approval
right after ``call --no-wait``, as real ``toolcalls`` processes against the session's dev server
and a real worker."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import make_config, pending_approval, running_worker
from tests.worker.support import Done, command, pending_entry, pending_row
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, EventKind

APPROVERS = {
    "groups": {"ops": ["alice", "bob"]},
    "rules": {"filesystem.write": {"approvers": ["ops"]}},
    "max_grant_seconds": 3600,
}


async def started(tmp_path: Path, address: str, task_queue: str, token: str) -> str:
    workflow_id = f"cli-grant-{uuid.uuid4()}"
    done = await command(
        tmp_path,
        address,
        *("call", "probe_write", json.dumps({"token": token}), "--no-wait", "--id", workflow_id),
        *("--task-queue", task_queue),
    )
    assert done.code == 0, done.stderr
    return workflow_id


async def test_pending_shows_who_may_decide_and_the_cli_approves_an_edit(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=APPROVERS)
    async with running_worker(client, config) as probes:
        workflow_id = await started(tmp_path, address, task_queue, "draft")
        listed = await pending_entry(tmp_path, address, workflow_id)
        assert listed["may_decide"] == "ops"
        assert (await pending_row(tmp_path, address, workflow_id))[4] == "ops"
        refused = await command(tmp_path, address, "approve", workflow_id, "--by", "mallory")
        assert refused == Done(
            1,
            "",
            f"toolcalls: approve {workflow_id}: rejected: 'mallory' may not decide this call; "
            "it needs ops\n",
        )
        bad = await command(tmp_path, address, "approve", workflow_id, "--edit", "[1]")
        assert bad.code == 2
        assert "--edit must be a JSON object, not list" in bad.stderr
        edited = await command(
            tmp_path,
            address,
            *("approve", workflow_id, "--by", "alice", "--edit", '{"token": "final"}', "--json"),
        )
        assert edited.code == 0, edited.stderr
        record = json.loads(edited.stdout)["record"]
        assert record["approver"] == "alice"
        handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.output is not None
    assert result.output["token"] == "final"
    assert record["digest"] == result.digest
    assert [(e.original, e.edited) for e in result.edits] == [
        ({"token": "draft"}, {"token": "final"})
    ]
    assert probes.runs == {"probe_write": 1}


async def test_approve_remembering_then_grants_list_and_revoke(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=APPROVERS)
    async with running_worker(client, config) as probes:
        first = await started(tmp_path, address, task_queue, "t")
        await pending_approval(client.get_workflow_handle_for(ToolCallWorkflow.run, first))
        usage = await command(tmp_path, address, "approve", first, "--any-arguments")
        assert usage.code == 2
        assert "--scope and --any-arguments go with --remember" in usage.stderr
        approved = await command(
            tmp_path,
            address,
            *("approve", first, "--by", "bob", "--remember", "30m", "--scope", "deployment"),
        )
        assert approved.code == 0, approved.stderr
        result = await client.get_workflow_handle_for(ToolCallWorkflow.run, first).result()
        assert result.approval is not None
        grant_id = result.approval.grant_id
        assert grant_id is not None
        assert EventKind.GRANT_CREATED in [e.kind for e in result.events]

        deadline = time.monotonic() + 20
        while True:
            listed = await command(tmp_path, address, "grants", "list", "--json")
            assert listed.code == 0, listed.stderr
            grants = json.loads(listed.stdout)
            if any(grant["grant_id"] == grant_id for grant in grants):
                break
            assert time.monotonic() < deadline, "the grant was never listed"
            await asyncio.sleep(0.2)
        (grant,) = [grant for grant in grants if grant["grant_id"] == grant_id]
        assert (grant["tool"], grant["approver"], grant["scope"]) == (
            "probe_write",
            "bob",
            "deployment",
        )
        table = await command(tmp_path, address, "grants", "list", "--tool", "probe_write")
        assert grant_id in table.stdout

        later = await started(tmp_path, address, task_queue, "t")
        done = await client.get_workflow_handle_for(ToolCallWorkflow.run, later).result()
        assert done.approval is not None
        assert done.approval.via == "grant"

        revoked = await command(tmp_path, address, "grants", "revoke", grant_id, "--by", "bob")
        assert revoked == Done(0, f"revoked {grant_id}\n", "")
        ended = await asyncio.wait_for(client.get_workflow_handle(grant_id).result(), 30)
        assert (ended["ended"], ended["revoked_by"]) == ("revoked", "bob")
        again = await command(tmp_path, address, "grants", "revoke", grant_id)
        assert again.code == 1
        assert "the grant has already ended" in again.stderr
    assert probes.runs == {"probe_write": 2}


async def test_approve_right_after_call_no_wait_finds_the_request(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    """``call --no-wait`` returns once the approval request is out, even while its preview takes
    a while, so the ``approve`` pasted after it (README.md, docs/cli.md) finds it."""
    async with running_worker(client, make_config(task_queue)) as probes:
        probes.prepare_delay = 2.0
        workflow_id = await started(tmp_path, address, task_queue, "t")
        approved = await command(tmp_path, address, "approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "alice"
