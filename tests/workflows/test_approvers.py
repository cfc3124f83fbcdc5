"""Who may approve, how many, edits, reminders and escalation: ``[approvers]`` through a real
``ToolCallWorkflow``."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio.client import Client

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    running_worker,
    signal_decision,
    start_call,
    update_rejection,
    wait_for,
)
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import EditProposal
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    EventKind,
)

OPS = {"groups": {"ops": ["alice", "bob"], "security": ["carol"]}}


def approvers(**rules: Any) -> dict[str, Any]:
    return {**OPS, "rules": rules}


async def test_only_the_rules_approvers_may_decide(client: Client, task_queue: str) -> None:
    config = make_config(
        task_queue, approvers=approvers(**{"filesystem.write": {"approvers": ["ops"]}})
    )
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        assert pending.approvers == ["alice", "bob"]
        assert pending.approvers_shown == ["ops"]
        # An update from anyone else is refused by the validator: nothing enters history.
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver="mallory")
        )
        assert refused == "'mallory' may not decide this call; it needs ops"
        # A signal from anyone else is ignored and logged.
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, approver="eve"))
        state = await wait_for(
            handle, lambda s: any(e.kind is EventKind.SIGNAL_IGNORED for e in s.events)
        )
        ignored = [e.message for e in state.events if e.kind is EventKind.SIGNAL_IGNORED]
        assert ignored == ["approve from eve: 'eve' may not decide this call; it needs ops"]
        assert probes.runs == {}
        record = await handle.execute_update(
            ToolCallWorkflow.decide, decision(pending, approver="bob")
        )
        assert record.approver == "bob"
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert probes.runs == {"probe_write": 1}
    assert [r.approver for r in result.approvals] == ["bob"]


async def test_two_distinct_approvers_are_needed(client: Client, task_queue: str) -> None:
    rule = {"approvers": ["ops"], "min_approvals": 2}
    config = make_config(task_queue, approvers=approvers(**{"filesystem.*": rule}))
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        assert pending.min_approvals == 2
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
        # The same approver twice counts once: refused, and the call still waits.
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver="alice")
        )
        assert refused == "'alice' already approved this call"
        state = await wait_for(
            handle,
            lambda s: s.pending_approval is not None and bool(s.pending_approval.approved_by),
        )
        assert state.pending_approval is not None
        assert state.pending_approval.approved_by == ["alice"]
        assert probes.runs == {}
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, approver="bob"))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert [(r.approver, r.via) for r in result.approvals] == [
        ("alice", "update"),
        ("bob", "signal"),
    ]
    kinds = [e.kind for e in result.events]
    assert kinds.count(EventKind.APPROVAL_RECORDED) == 1
    assert kinds.count(EventKind.APPROVAL_GRANTED) == 1


async def test_one_denial_ends_a_two_person_call(client: Client, task_queue: str) -> None:
    rule = {"approvers": ["ops"], "min_approvals": 2}
    config = make_config(task_queue, approvers=approvers(**{"filesystem.write": rule}))
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
        await handle.execute_update(
            ToolCallWorkflow.decide, decision(pending, approved=False, approver="bob", reason="no")
        )
        result = await handle.result()
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_DENIED
    assert result.error.message == "probe_write: denied by bob: no"
    assert probes.runs == {}


async def test_rules_that_allow_no_one_in_common_deny_at_once(
    client: Client, task_queue: str
) -> None:
    rules = {"probe_write": {"approvers": ["security"]}, "filesystem.write": {"approvers": ["ops"]}}
    config = make_config(task_queue, approvers=approvers(**rules))
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.POLICY_DENIED
    assert "no approver may decide this call" in result.error.message
    assert probes.runs == {}


async def test_an_edit_is_planned_again_and_runs_with_the_edited_arguments(
    client: Client, task_queue: str
) -> None:
    config = make_config(
        task_queue, approvers=approvers(**{"filesystem.write": {"approvers": ["ops"]}})
    )
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "draft"})
        pending = await pending_approval(handle)
        edited = decision(pending, approver="alice", arguments={"token": "final"})
        record = await handle.execute_update(ToolCallWorkflow.decide, edited)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output is not None
    assert result.output["token"] == "final"
    assert probes.runs == {"probe_write": 1}
    (edit,) = result.edits
    assert (edit.by, edit.original, edit.edited) == (
        "alice",
        {"token": "draft"},
        {"token": "final"},
    )
    assert edit.original_digest == pending.digest
    assert record.digest == edit.digest == result.digest != pending.digest
    assert result.approval is not None
    assert result.approval.digest == edit.digest
    kinds = [e.kind for e in result.events]
    assert kinds.count(EventKind.APPROVAL_REQUESTED) == 2
    assert EventKind.ARGUMENTS_EDITED in kinds


async def test_an_edit_that_needs_a_capability_the_approver_may_not_grant_is_refused(
    client: Client, task_queue: str
) -> None:
    # alice may approve reads; turning the GET into a POST needs network.write, which only
    # security may approve: the edit is refused and the original request still waits.
    rules = {"network.read": {"approvers": ["ops"]}, "network.write": {"approvers": ["security"]}}
    config = make_config(task_queue, approvers=approvers(**rules))
    policy = CapabilityPolicy(rules={"network.read": Effect.REQUIRE_APPROVAL})
    async with running_worker(client, config) as probes:
        handle = await start_call(
            client, task_queue, "probe_method", {"method": "GET"}, policy=policy
        )
        pending = await pending_approval(handle)
        refused = await update_rejection(
            handle,
            ToolCallWorkflow.decide,
            decision(pending, approver="alice", arguments={"method": "POST"}),
        )
        assert refused == "'alice' may not approve the edited call (network.write)"
        # Arguments the plan refuses are refused the same way.
        refused = await update_rejection(
            handle,
            ToolCallWorkflow.decide,
            decision(pending, approver="alice", arguments={"method": "PUT"}),
        )
        assert "probe_method: invalid arguments: method" in refused
        state = await wait_for(
            handle,
            lambda s: [e.kind for e in s.events].count(EventKind.EDIT_REFUSED) == 2,
        )
        assert state.pending_approval is not None
        assert state.pending_approval.request_id == pending.request_id
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="bob"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"method": "GET"}
    assert result.edits == []
    assert probes.runs == {"probe_method": 1}


async def test_reminders_and_escalation_on_short_timers(client: Client, task_queue: str) -> None:
    rule = {
        "approvers": ["ops"],
        "remind_every_seconds": 1,
        "escalate_after_seconds": 2.5,
        "escalate_to": ["security"],
    }
    config = make_config(task_queue, approvers=approvers(**{"filesystem.write": rule}))
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver="carol")
        )
        assert "'carol' may not decide this call" in refused
        state = await wait_for(
            handle, lambda s: any(e.kind is EventKind.ESCALATED for e in s.events)
        )
        assert state.pending_approval is not None
        assert state.pending_approval.escalated
        assert state.pending_approval.approvers == ["alice", "bob", "carol"]
        reminders = [e for e in state.events if e.kind is EventKind.REMINDER]
        assert len(reminders) >= 2
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="carol"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "carol"
    assert probes.runs == {"probe_write": 1}


async def test_without_a_decision_an_escalated_call_still_expires(
    client: Client, task_queue: str
) -> None:
    rule = {"approvers": ["ops"], "escalate_after_seconds": 0.5, "escalate_to": ["security"]}
    config = make_config(task_queue, approvers=approvers(**{"filesystem.write": rule}))
    async with running_worker(client, config):
        handle = await start_call(
            client, task_queue, "probe_write", {"token": "t"}, approval_timeout=timedelta(seconds=2)
        )
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_TIMED_OUT
    kinds = [e.kind for e in result.events]
    assert kinds.index(EventKind.ESCALATED) < kinds.index(EventKind.APPROVAL_TIMED_OUT)


async def test_an_edit_can_arrive_by_signal(client: Client, task_queue: str) -> None:
    config = make_config(task_queue)
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "draft"})
        pending = await pending_approval(handle)
        payload = signal_decision(pending, approver="dana").model_copy(
            update={"arguments": {"token": "by-signal"}}
        )
        await handle.signal(ToolCallWorkflow.approve, payload)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.output is not None
    assert result.output["token"] == "by-signal"
    assert [(e.by, e.edited) for e in result.edits] == [("dana", {"token": "by-signal"})]
    assert result.approval is not None
    assert (result.approval.approver, result.approval.via) == ("dana", "signal")
    assert probes.runs == {"probe_write": 1}


async def test_a_denial_cannot_carry_an_edit(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        refused = await update_rejection(
            handle,
            ToolCallWorkflow.decide,
            decision(pending, approved=False, arguments={"token": "other"}),
        )
        assert refused == "a denial cannot edit the arguments or create a grant"
        await handle.terminate("test over")


async def test_an_edit_can_be_proposed_and_its_preview_approved_after(
    client: Client, task_queue: str
) -> None:
    config = make_config(
        task_queue, approvers=approvers(**{"filesystem.write": {"approvers": ["ops"]}})
    )
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "draft"})
        pending = await pending_approval(handle)
        proposal = EditProposal(
            request_id=pending.request_id,
            digest=pending.digest,
            editor="alice",
            arguments={"token": "final"},
        )
        proposed = await handle.execute_update(ToolCallWorkflow.edit, proposal)
        # The new request shows the edited call's own preview, and nothing is approved yet.
        assert proposed.request_id != pending.request_id
        assert proposed.arguments == {"token": "final"}
        assert [a.text for a in proposed.preview] == ["+final\n"]
        assert proposed.approved_by == []
        assert probes.runs == {}
        stale = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver="bob")
        )
        assert stale.startswith("unknown or stale request id")
        await handle.execute_update(ToolCallWorkflow.decide, decision(proposed, approver="bob"))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.output is not None
    assert result.output["token"] == "final"
    assert result.approval is not None
    assert result.approval.approver == "bob"
    assert [(e.by, e.edited) for e in result.edits] == [("alice", {"token": "final"})]
