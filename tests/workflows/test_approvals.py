"""Approvals: the decide update, the approve/deny signals, their validation, races and timers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from tests.support.harness import (
    Handle,
    decision,
    history_types,
    listed,
    make_config,
    pending_approval,
    running_worker,
    signal_decision,
    start_call,
    update_rejection,
    wait_for,
    wait_for_phase,
)
from tests.support.tools import ProbeTools
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    DecisionInput,
)
from toolcalls.workflows.models.call import (
    MEMO_PENDING_APPROVAL,
    SEARCH_CAPABILITIES,
    SEARCH_STATUS,
    SEARCH_TOOL,
    CallStatus,
    ErrorCode,
    EventKind,
    Phase,
)

ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
TIMER_STARTED = EventType.EVENT_TYPE_TIMER_STARTED
TIMER_FIRED = EventType.EVENT_TYPE_TIMER_FIRED
TASK_STARTED = EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
TASK_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
MS = timedelta(milliseconds=1)


async def rejection(handle: Handle, sent: ApprovalDecision) -> str:
    return await update_rejection(handle, ToolCallWorkflow.decide, sent)


LOST = {"the request was already decided", "workflow update was aborted by closing workflow"}


def lost_reason(outcome: object) -> str | None:
    """Why a racing decision lost: refused by the validator, or aborted as the call closed."""
    if isinstance(outcome, WorkflowUpdateFailedError):
        return outcome.cause.message if isinstance(outcome.cause, ApplicationError) else None
    return outcome.message if isinstance(outcome, RPCError) else None


async def test_approve_via_update_reaches_the_tool(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(
            client,
            task_queue,
            "probe_write",
            {"token": "a"},
            call_id="toolu_1",
            approval_timeout=timedelta(minutes=15),
        )
        pending = await pending_approval(handle)
        assert probes.runs == {}
        assert (pending.workflow_id, pending.call_id) == (handle.id, "toolu_1")
        assert (pending.tool, pending.arguments) == ("probe_write", {"token": "a"})
        assert pending.capabilities == ["filesystem.write"]
        assert pending.reasons == [
            "filesystem.write: require_approval (deployment rule filesystem.write)"
        ]
        # The tool's own preview; the arguments are in the request, not repeated.
        assert [(a.kind, a.text) for a in pending.preview] == [("diff", "+a\n")]
        assert pending.expires_at == pending.requested_at + timedelta(minutes=15)

        record = await handle.execute_update(
            ToolCallWorkflow.decide, decision(pending, approver="alice", reason="looks right")
        )
        result = await handle.result()

    assert isinstance(record, ApprovalRecord)
    assert (record.request_id, record.digest) == (pending.request_id, pending.digest)
    assert (record.approved, record.approver, record.reason) == (True, "alice", "looks right")
    assert record.via == "update"
    assert record.decided_at >= pending.requested_at
    assert result.status is CallStatus.COMPLETED
    assert result.approval == record
    assert result.digest == pending.digest
    assert result.output == {
        "token": "a",
        "idempotency_key": f"{handle.id}:toolu_1",
        "approved_by": "alice",
    }
    assert probes.runs == {"probe_write": 1}
    assert (await history_types(handle)).count(ACCEPTED) == 1


async def test_approve_via_signal(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "b"})
        pending = await pending_approval(handle)
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, "bob", "fine"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approved
    assert (result.approval.approver, result.approval.reason) == ("bob", "fine")
    assert result.approval.via == "signal"
    assert result.output["approved_by"] == "bob"
    assert probes.runs == {"probe_write": 1}
    assert ACCEPTED not in await history_types(handle)


@pytest.mark.parametrize("via", ["update", "signal"])
async def test_deny_keeps_the_approver_and_reason(
    client: Client, task_queue: str, via: str
) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "c"})
        pending = await pending_approval(handle)
        if via == "update":
            sent = decision(pending, approved=False, approver="carol", reason="wrong file")
            record = await handle.execute_update(ToolCallWorkflow.decide, sent)
            assert not record.approved
        else:
            sent_signal = signal_decision(pending, "carol", "wrong file")
            await handle.signal(ToolCallWorkflow.deny, sent_signal)
        result = await handle.result()
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_DENIED
    assert result.error.message == "probe_write: denied by carol: wrong file"
    assert result.approval is not None
    assert not result.approval.approved
    assert (result.approval.approver, result.approval.reason, result.approval.via) == (
        "carol",
        "wrong file",
        via,
    )
    assert result.output is None
    assert probes.runs == {}
    assert EventKind.APPROVAL_DENIED in [e.kind for e in result.events]


async def test_pending_request_is_visible_without_a_worker(client: Client, task_queue: str) -> None:
    config = make_config(task_queue)
    async with running_worker(client, config):
        handle = await start_call(client, task_queue, "probe_write", {"token": "d"})
        pending = await pending_approval(handle)

    # No worker runs now: describe, memo, search attributes and visibility still answer.
    description = await handle.describe()
    memo_request = await description.memo_value(MEMO_PENDING_APPROVAL, type_hint=ApprovalRequest)
    assert memo_request == pending
    attributes = description.typed_search_attributes
    assert attributes.get(SEARCH_STATUS) == "awaiting_approval"
    assert attributes.get(SEARCH_TOOL) == "probe_write"
    assert attributes.get(SEARCH_CAPABILITIES) == ["filesystem.write"]
    query = 'ToolCallStatus="awaiting_approval" AND ToolName="probe_write"'
    found = await listed(client, query, handle.id)
    assert await found.memo_value(MEMO_PENDING_APPROVAL, type_hint=ApprovalRequest) == pending
    await listed(client, 'ToolCapabilities="filesystem.write"', handle.id)

    async with running_worker(client, config):
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "completed"
    assert MEMO_PENDING_APPROVAL not in await description.memo()
    found = await listed(client, 'ToolCallStatus="completed" AND ToolName="probe_write"', handle.id)
    assert MEMO_PENDING_APPROVAL not in await found.memo()


async def test_rejected_decisions_leave_nothing_in_history(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        earlier = await start_call(client, task_queue, "probe_sleep", {"seconds": 2})
        stale = await pending_approval(earlier)
        await earlier.signal(ToolCallWorkflow.deny, signal_decision(stale, "bob"))
        assert (await earlier.result()).status is CallStatus.DENIED

        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 2})
        pending = await pending_approval(handle)
        assert stale.digest == pending.digest
        assert stale.request_id != pending.request_id

        unknown = await rejection(handle, decision(pending, request_id="no-such-request"))
        assert unknown == "unknown or stale request id 'no-such-request'"
        old = await rejection(handle, decision(pending, request_id=stale.request_id))
        assert old == f"unknown or stale request id {stale.request_id!r}"
        digest = await rejection(handle, decision(pending, digest="0" * 64))
        assert digest == "digest does not match the pending request"
        assert (await wait_for_phase(handle, Phase.AWAITING_APPROVAL)).pending_approval == pending

        first = await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        await wait_for_phase(handle, Phase.RUNNING)
        second = await rejection(handle, decision(pending, approved=False, approver="eve"))
        assert second == "the request was already decided"
        result = await handle.result()

    assert result.status is CallStatus.COMPLETED
    assert result.approval == first
    assert probes.runs == {"probe_sleep": 1}
    assert EventKind.SIGNAL_IGNORED not in [e.kind for e in result.events]
    types = await history_types(handle)
    assert types.count(ACCEPTED) == 1
    assert SIGNALED not in types


async def test_decision_after_expiry_is_rejected(client: Client, task_queue: str) -> None:
    config = make_config(task_queue)
    async with running_worker(client, config):
        handle = await start_call(
            client, task_queue, "probe_write", {"token": "e"}, approval_timeout=timedelta(seconds=2)
        )
        pending = await pending_approval(handle)
    # The approver clicks after the request expired, while no worker ran: the timer has fired in
    # history but the workflow has not seen it yet, so the request is still pending and expired.
    assert pending.expires_at is not None
    await asyncio.sleep((pending.expires_at - datetime.now(UTC)).total_seconds() + 0.5)
    late = asyncio.create_task(rejection(handle, decision(pending)))
    await asyncio.sleep(0.5)
    async with running_worker(client, config) as probes:
        reason = await late
        result = await handle.result()
    assert reason == "the approval request has expired"
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_TIMED_OUT
    assert result.approval is None
    assert probes.runs == {}
    assert ACCEPTED not in await history_types(handle)


async def test_invalid_signals_are_recorded_and_ignored(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 2})
        pending = await pending_approval(handle)
        await handle.signal(
            ToolCallWorkflow.deny, signal_decision(pending, "mallory", request_id="x")
        )
        await handle.signal(
            ToolCallWorkflow.approve, signal_decision(pending, "eve", digest="0" * 64)
        )
        state = await wait_for(
            handle, lambda s: [e.kind for e in s.events].count(EventKind.SIGNAL_IGNORED) == 2
        )
        assert state.phase is Phase.AWAITING_APPROVAL
        assert state.pending_approval == pending

        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, "bob"))
        await wait_for_phase(handle, Phase.RUNNING)
        # A duplicate (signals are at-least-once) or a late change of mind changes nothing.
        await handle.signal(ToolCallWorkflow.deny, signal_decision(pending, "bob"))
        result = await handle.result()

    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert (result.approval.approved, result.approval.approver) == (True, "bob")
    assert probes.runs == {"probe_sleep": 1}
    ignored = [e.message for e in result.events if e.kind is EventKind.SIGNAL_IGNORED]
    assert ignored == [
        "deny from mallory: unknown or stale request id 'x'",
        "approve from eve: digest does not match the pending request",
        "deny from bob: the request was already decided",
    ]
    assert (await history_types(handle)).count(SIGNALED) == 4


async def test_racing_updates_exactly_one_wins(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "f"})
        pending = await pending_approval(handle)
        outcomes = await asyncio.gather(
            handle.execute_update(ToolCallWorkflow.decide, decision(pending, True, "alice")),
            handle.execute_update(ToolCallWorkflow.decide, decision(pending, False, "bob")),
            return_exceptions=True,
        )
        result = await handle.result()
    won = [o for o in outcomes if isinstance(o, ApprovalRecord)]
    assert len(won) == 1
    assert [lost_reason(o) in LOST for o in outcomes if o is not won[0]] == [True]
    assert result.approval == won[0]
    if won[0].approved:
        assert result.status is CallStatus.COMPLETED
        assert probes.runs == {"probe_write": 1}
    else:
        assert result.status is CallStatus.DENIED
        assert probes.runs == {}
    assert (await history_types(handle)).count(ACCEPTED) == 1


async def test_racing_update_and_signal_exactly_one_wins(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "g"})
        pending = await pending_approval(handle)
        outcomes = await asyncio.gather(
            handle.signal(ToolCallWorkflow.deny, signal_decision(pending, "bob", "no")),
            handle.execute_update(ToolCallWorkflow.decide, decision(pending, True, "alice")),
            return_exceptions=True,
        )
        result = await handle.result()
    updated = outcomes[1]
    ignored = [e.message for e in result.events if e.kind is EventKind.SIGNAL_IGNORED]
    assert result.approval is not None
    if isinstance(updated, ApprovalRecord):
        assert result.approval == updated
        assert result.status is CallStatus.COMPLETED
        assert ignored == ["deny from bob: the request was already decided"]
        assert probes.runs == {"probe_write": 1}
    else:
        assert lost_reason(updated) in LOST
        assert (result.approval.approver, result.approval.via) == ("bob", "signal")
        assert result.status is CallStatus.DENIED
        assert ignored == []
        assert probes.runs == {}
        assert ACCEPTED not in await history_types(handle)


async def test_approval_timeout_is_not_a_denial(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(
            client, task_queue, "probe_write", {"token": "h"}, approval_timeout=timedelta(seconds=2)
        )
        pending = await pending_approval(handle)
        assert pending.expires_at == pending.requested_at + timedelta(seconds=2)
        result = await handle.result()
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_TIMED_OUT
    assert result.error.message == "probe_write: no approval decision within the approval timeout"
    assert result.approval is None
    assert 2 <= result.waited_seconds < 10
    assert probes.runs == {}
    kinds = [e.kind for e in result.events]
    assert EventKind.APPROVAL_TIMED_OUT in kinds
    assert EventKind.APPROVAL_DENIED not in kinds
    types = await history_types(handle)
    assert (types.count(TIMER_STARTED), types.count(TIMER_FIRED)) == (1, 1)


async def test_no_approval_timeout_waits_without_a_timer(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(
            client, task_queue, "probe_write", {"token": "i"}, approval_timeout=None
        )
        pending = await pending_approval(handle)
        assert pending.expires_at is None
        await asyncio.sleep(1)
        assert TIMER_STARTED not in await history_types(handle)
        assert (await wait_for_phase(handle, Phase.AWAITING_APPROVAL)).pending_approval == pending
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, "bob"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert probes.runs == {"probe_write": 1}
    assert TIMER_STARTED not in await history_types(handle)


BUDGET_SECONDS = 6


@pytest.mark.parametrize("bound", ["timeout", "deadline", "naive_deadline"])
async def test_call_budget_bounds_the_approval_wait(
    client: Client, task_queue: str, bound: str
) -> None:
    # Long enough for the wait to be seen on a loaded machine before the budget ends it.
    deadline = datetime.now(UTC) + timedelta(seconds=BUDGET_SECONDS)
    budget: dict[str, dict[str, object]] = {
        "timeout": {"timeout": timedelta(seconds=BUDGET_SECONDS)},
        "deadline": {"deadline": deadline},
        # A deadline without a zone is read as UTC (it used to fail every workflow task).
        "naive_deadline": {"deadline": deadline.replace(tzinfo=None)},
    }
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(
            client,
            task_queue,
            "probe_write",
            {"token": "j"},
            approval_timeout=timedelta(hours=1),
            **budget[bound],
        )
        pending = await pending_approval(handle)
        assert pending.expires_at is not None
        assert pending.expires_at <= pending.requested_at + timedelta(seconds=BUDGET_SECONDS)
        if bound != "timeout":
            assert pending.expires_at == deadline
        result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is CallStatus.TIMED_OUT
    assert result.error is not None
    assert result.error.code is ErrorCode.BUDGET_EXCEEDED
    assert result.approval is None
    assert probes.runs == {}


async def test_zero_timeout_is_a_spent_budget(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(
            client, task_queue, "probe_write", {"token": "z"}, timeout=timedelta(0)
        )
        result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.BUDGET_EXCEEDED
    assert [e.kind for e in result.events] == [EventKind.PLANNED, EventKind.FINISHED]
    assert probes.runs == {}


async def test_precondition_changed_after_the_preview(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "k"})
        pending = await pending_approval(handle)
        probes.expected["k"] = "other"
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await handle.result()
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.PRECONDITION_FAILED
    assert result.error.message == "probe_write: changed since preview"
    assert result.approval is not None
    assert result.approval.approved
    assert probes.runs == {"probe_write": 1}


async def test_signal_while_preparing_then_after_publication(
    client: Client, task_queue: str
) -> None:
    probes = ProbeTools()
    probes.prepare_delay = 1.5
    async with running_worker(client, make_config(task_queue), probes):
        handle = await start_call(client, task_queue, "probe_write", {"token": "l"})
        await wait_for_phase(handle, Phase.PREPARING)
        # A blind approval (no request exists yet) is handled at once and cannot approve the
        # request published later; neither can it block the wait from seeing a real decision.
        await handle.signal(
            ToolCallWorkflow.approve, DecisionInput(request_id="guess", digest="?", approver="eve")
        )
        state = await wait_for(
            handle, lambda s: EventKind.SIGNAL_IGNORED in [e.kind for e in s.events]
        )
        assert state.phase is Phase.PREPARING
        assert state.pending_approval is None
        pending = await pending_approval(handle)
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, "bob"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output["approved_by"] == "bob"
    assert probes.runs == {"probe_write": 1}
    assert [(e.kind, e.message) for e in result.events][:2] == [
        (EventKind.PLANNED, "probe_write (write; filesystem.write)"),
        (EventKind.SIGNAL_IGNORED, "approve from eve: no approval is pending"),
    ]


async def test_event_log_order_and_workflow_time(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "probe_write", {"token": "m"})
        pending = await pending_approval(handle)
        await asyncio.sleep(0.5)
        record = await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await handle.result()
    assert [e.kind for e in result.events] == [
        EventKind.PLANNED,
        EventKind.APPROVAL_REQUESTED,
        EventKind.APPROVAL_GRANTED,
        EventKind.STARTED,
        EventKind.FINISHED,
    ]
    stamps = [e.at for e in result.events]
    assert stamps == sorted(stamps)
    assert result.started_at <= stamps[0]
    assert stamps[-1] == result.finished_at
    assert result.events[1].at == pending.requested_at
    assert result.events[2].at == record.decided_at
    assert record.decided_at - pending.requested_at >= timedelta(seconds=0.5)
    # Workflow time: every stamp falls inside one of the workflow's tasks (a local activity
    # advances workflow time within its task), never between them.
    history = await handle.fetch_history()
    spans, opened = [], None
    for event in history.events:
        at = event.event_time.ToDatetime(tzinfo=UTC)
        if event.event_type == TASK_STARTED:
            opened = at
        elif event.event_type == TASK_COMPLETED and opened is not None:
            spans.append((opened - MS, at + MS))
    for stamp in stamps:
        assert any(start <= stamp <= end for start, end in spans), stamp
    assert result.waited_seconds == (record.decided_at - pending.requested_at).total_seconds()
