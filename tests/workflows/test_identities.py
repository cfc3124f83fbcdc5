"""Approver names through a real ``ToolCallWorkflow``: spellings of one name are one approver to
the two-person rule, and a name with an invisible character is refused."""

from __future__ import annotations

import asyncio

import pytest
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
from toolcalls.workflows.models.approval import ApprovalRecord
from toolcalls.workflows.models.call import CallStatus, EventKind
from toolcalls.workflows.models.views import Delivery
from toolcalls.workflows.reach.client import ToolCallClient

TWO_OF_ANYONE = {"rules": {"filesystem.write": {"min_approvals": 2}}}
"""Anyone may decide, two distinct approvers needed."""
VARIANTS = ["Alice", "alice ", "\uff41\uff4c\uff49\uff43\uff45", "ALICE\u3000"]
"""``alice`` capitalised, with a trailing space, in full-width letters, shouted with an
ideographic space."""


@pytest.mark.parametrize("variant", VARIANTS)
async def test_a_spelling_of_the_first_approver_is_not_a_second_one(
    client: Client, task_queue: str, variant: str
) -> None:
    config = make_config(task_queue, approvers=TWO_OF_ANYONE)
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        assert pending.min_approvals == 2
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver=variant)
        )
        assert refused == "'alice' already approved this call"
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, approver=variant))
        state = await wait_for(
            handle, lambda s: any(e.kind is EventKind.SIGNAL_IGNORED for e in s.events)
        )
        ignored = [e.message for e in state.events if e.kind is EventKind.SIGNAL_IGNORED]
        assert ignored == [f"approve from {variant}: 'alice' already approved this call"]
        assert state.pending_approval is not None
        assert state.pending_approval.approved_by == ["alice"]
        assert probes.runs == {}
        # A second person spelled oddly is that person, recorded canonically.
        record = await handle.execute_update(
            ToolCallWorkflow.decide, decision(pending, approver=" BOB ")
        )
        assert record.approver == "bob"
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert [r.approver for r in result.approvals] == ["alice", "bob"]
    assert probes.runs == {"probe_write": 1}


async def test_a_spelling_that_came_first_is_recorded_canonically(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=TWO_OF_ANYONE)
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        await handle.signal(
            ToolCallWorkflow.approve, signal_decision(pending, approver="\uff21lice")
        )
        state = await wait_for(
            handle,
            lambda s: s.pending_approval is not None and bool(s.pending_approval.approved_by),
        )
        assert state.pending_approval is not None
        assert state.pending_approval.approved_by == ["alice"]
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver="alice")
        )
        assert refused == "'alice' already approved this call"
        assert probes.runs == {}


async def test_the_allow_list_matches_a_name_however_it_is_spelled(
    client: Client, task_queue: str
) -> None:
    rules = {"groups": {"ops": ["alice"]}, "rules": {"filesystem.write": {"approvers": ["ops"]}}}
    async with running_worker(client, make_config(task_queue, approvers=rules)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        record = await handle.execute_update(
            ToolCallWorkflow.decide, decision(pending, approver="ALICE")
        )
        assert record.approver == "alice"
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert probes.runs == {"probe_write": 1}


async def test_a_name_with_an_invisible_character_is_refused(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=TWO_OF_ANYONE)
    invisible = "alice\u200b"
    problem = "'alice\\u200b': a name cannot hold the invisible character U+200B (ZERO WIDTH SPACE)"
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver=invisible)
        )
        assert refused == problem
        # Nor may such a name deny: the refusal is about the name, whatever the decision.
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, False, approver="b\u202eob")
        )
        assert "U+202E (RIGHT-TO-LEFT OVERRIDE)" in refused
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, approver=invisible))
        state = await wait_for(
            handle, lambda s: any(e.kind is EventKind.SIGNAL_IGNORED for e in s.events)
        )
        ignored = [e.message for e in state.events if e.kind is EventKind.SIGNAL_IGNORED]
        assert ignored == [f"approve from {invisible}: {problem}"]
        assert state.pending_approval is not None
        assert state.pending_approval.approved_by == ["alice"]
        assert probes.runs == {}
        await handle.execute_update(
            ToolCallWorkflow.decide, decision(pending, False, approver="Bob", reason="no")
        )
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.message == "probe_write: denied by bob: no"
    assert probes.runs == {}


async def test_through_the_python_client(client: Client, task_queue: str) -> None:
    config = make_config(task_queue, approvers=TWO_OF_ANYONE)
    calls = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        await pending_approval(handle)
        first = await calls.approve(handle.id, approver="alice")
        assert first.delivery is Delivery.ACCEPTED
        for variant in VARIANTS:
            again = await calls.approve(handle.id, approver=variant)
            assert (again.delivery, again.reason) == (
                Delivery.REJECTED,
                "'alice' already approved this call",
            )
        invisible = await calls.deny(handle.id, approver="bob\u200b")
        assert invisible.delivery is Delivery.REJECTED
        assert invisible.reason == (
            "'bob\\u200b': a name cannot hold the invisible character U+200B (ZERO WIDTH SPACE)"
        )
        assert probes.runs == {}
        second = await calls.approve(handle.id, approver="Bob")
        assert second.delivery is Delivery.ACCEPTED
        assert isinstance(second.record, ApprovalRecord)
        assert second.record.approver == "bob"
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert probes.runs == {"probe_write": 1}
