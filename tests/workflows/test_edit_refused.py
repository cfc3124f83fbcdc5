"""Edits that cannot run are refused and the original request keeps waiting: arguments the plan
refuses and previews the tool refuses (a path outside the roots), through a real
``ToolCallWorkflow`` on a real server, with the files family on a real root."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowUpdateStage

from tests.support.harness import (
    Handle,
    decision,
    make_config,
    pending_approval,
    running_worker,
    signal_decision,
    start_call,
    update_rejection,
    wait_for,
)
from toolcalls.worker.config import Config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import ApprovalRequest, EditProposal
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, Phase

OPS = {"groups": {"ops": ["alice", "bob"]}}


def files_config(task_queue: str, tmp_path: Path, **rule: Any) -> Config:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    files = {"roots": [str(root)], "checkpoints": str(tmp_path / "checkpoints.db")}
    approvers = {**OPS, "rules": {"filesystem.write": {"approvers": ["ops"], **rule}}}
    return make_config(task_queue, tools=["create_file"], files=files, approvers=approvers)


def proposal(pending: ApprovalRequest, arguments: dict[str, Any], editor: str) -> EditProposal:
    return EditProposal(
        request_id=pending.request_id, digest=pending.digest, editor=editor, arguments=arguments
    )


async def refused(handle: Handle, update: Any, arg: Any) -> str:
    """Why the call refused an edit; a call that never answers fails the test, not hangs it."""
    return await asyncio.wait_for(update_rejection(handle, update, arg), 30)


def refusals(events: list[Any]) -> list[str]:
    return [e.message for e in events if e.kind is EventKind.EDIT_REFUSED]


async def test_an_edit_outside_the_roots_is_refused_and_the_original_request_still_runs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    target = tmp_path / "root" / "notes.txt"
    outside = tmp_path / "outside.txt"
    edit = {"path": str(outside), "content": "edited\n"}
    reason = f"create_file: {outside}: not inside a configured root"
    async with running_worker(client, files_config(task_queue, tmp_path, min_approvals=2)):
        handle = await start_call(
            client, task_queue, "create_file", {"path": str(target), "content": "original\n"}
        )
        pending = await pending_approval(handle)
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
        # The edit update, an approval carrying the edit, and the same by signal: each refused
        # with the tool's reason; the signal leaves an event only.
        assert await refused(handle, ToolCallWorkflow.edit, proposal(pending, edit, "bob")) == (
            reason
        )
        with_edit = decision(pending, approver="bob", arguments=edit)
        assert await refused(handle, ToolCallWorkflow.decide, with_edit) == reason
        await handle.signal(
            ToolCallWorkflow.approve, signal_decision(pending, approver="bob", arguments=edit)
        )
        state = await wait_for(handle, lambda s: len(refusals(s.events)) == 3)
        assert refusals(state.events) == [f"by bob: {reason}"] * 3
        # The original request waits on, as it was, with alice's approval.
        assert state.phase is Phase.AWAITING_APPROVAL
        assert state.result is None
        assert state.pending_approval is not None
        assert state.pending_approval.model_dump(exclude={"approved_by"}) == pending.model_dump(
            exclude={"approved_by"}
        )
        assert state.pending_approval.approved_by == ["alice"]
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="bob"))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED, result.error
    assert target.read_text() == "original\n"
    assert not outside.exists()
    assert result.edits == []
    assert result.digest == pending.digest
    assert [r.approver for r in result.approvals] == ["alice", "bob"]
    assert EventKind.ARGUMENTS_EDITED not in [e.kind for e in result.events]


async def test_edits_that_fail_validation_are_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    target = root / "notes.txt"
    async with running_worker(client, files_config(task_queue, tmp_path)):
        (root / "taken.txt").write_text("someone's\n")
        handle = await start_call(
            client, task_queue, "create_file", {"path": str(target), "content": "original\n"}
        )
        pending = await pending_approval(handle)
        # The plan refuses a relative path and a missing argument ...
        why = await refused(
            handle, ToolCallWorkflow.edit, proposal(pending, {"path": "notes.txt"}, "alice")
        )
        assert why.startswith("create_file: invalid arguments: ")
        assert "content" in why
        # ... the preview a directory that does not exist and a file that does.
        missing = {"path": str(root / "no" / "notes.txt"), "content": "x\n"}
        why = await refused(handle, ToolCallWorkflow.edit, proposal(pending, missing, "alice"))
        assert why == (
            f"create_file: {root / 'no' / 'notes.txt'}: its directory does not exist "
            "(directories are not created)"
        )
        taken = {"path": str(root / "taken.txt"), "content": "x\n"}
        why = await refused(
            handle, ToolCallWorkflow.decide, decision(pending, approver="bob", arguments=taken)
        )
        assert why.startswith(f"create_file: {root / 'taken.txt'}: already exists")
        state = await wait_for(handle, lambda s: len(refusals(s.events)) == 3)
        assert state.pending_approval is not None
        assert state.pending_approval.request_id == pending.request_id
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="bob"))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED, result.error
    assert target.read_text() == "original\n"
    assert (root / "taken.txt").read_text() == "someone's\n"
    assert result.edits == []


async def test_a_preview_that_fails_otherwise_ends_the_call_and_answers_the_edit(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        probes.prepare_failures = {
            "stale": ErrorCode.PRECONDITION_FAILED,
            "broken": ErrorCode.EXECUTION_FAILED,
        }
        handle = await start_call(client, task_queue, "probe_write", {"token": "draft"})
        pending = await pending_approval(handle)
        # A precondition the edited call fails is the edit's fault: refused.
        stale = proposal(pending, {"token": "stale"}, "alice")
        assert await refused(handle, ToolCallWorkflow.edit, stale) == (
            "probe_write: no preview of 'stale'"
        )
        # A tool that fails is not: the call ends as before, and the edit's update says so
        # instead of waiting for ever (which kept the call open).
        broken = proposal(pending, {"token": "broken"}, "alice")
        assert await refused(handle, ToolCallWorkflow.edit, broken) == (
            "the call ended before the edit was applied: probe_write: no preview of 'broken'"
        )
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.EXECUTION_FAILED
    assert probes.runs == {}


async def test_decisions_on_the_request_are_refused_while_an_edit_is_applied(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "draft"})
        pending = await pending_approval(handle)
        probes.prepare_delay = 1.5  # the edit's preview
        editing = await handle.start_update(
            ToolCallWorkflow.edit,
            proposal(pending, {"token": "final"}, "alice"),
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
        )
        await wait_for(handle, lambda s: s.phase is Phase.PREPARING)
        why = await refused(handle, ToolCallWorkflow.decide, decision(pending, approver="bob"))
        assert why == "an edit of this request is being applied; decide on the request it gives"
        proposed = await asyncio.wait_for(editing.result(), 30)
        assert proposed.arguments == {"token": "final"}
        await handle.execute_update(ToolCallWorkflow.decide, decision(proposed, approver="bob"))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.output is not None
    assert result.output["token"] == "final"
    assert [r.approver for r in result.approvals] == ["bob"]
