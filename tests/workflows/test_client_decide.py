"""``ToolCallClient``: deciding and answering, with a worker (update) and without (signal)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from tests.support.client import ASK, listed_pending, question_request, write_request
from tests.support.harness import history_types, make_config, running_worker
from toolcalls.workflows.call.deadlines import LATE_UPDATE, deliver_by_id, deliver_by_of
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import ApprovalDecision, ApprovalRecord, ApprovalRequest
from toolcalls.workflows.models.call import (
    CallStatus,
    ErrorCode,
    EventKind,
    Phase,
    ToolCallRequest,
)
from toolcalls.workflows.models.limits import PAYLOAD_LIMIT_BYTES
from toolcalls.workflows.models.question import (
    AskUserOutput,
    QuestionStatus,
)
from toolcalls.workflows.reach.client import (
    Delivery,
    NoPendingRequest,
    PayloadTooLarge,
    PendingCall,
    ToolCallClient,
)
from toolcalls.workflows.reach.client_base import STILL_APPLYING
from toolcalls.workflows.reach.delivery import signal_after_timeout

PROBE = timedelta(seconds=2)
UPDATE_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ADMITTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
}
SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED


def decision(
    pending: ApprovalRequest, approved: bool = True, **changes: object
) -> ApprovalDecision:
    sent = ApprovalDecision(
        request_id=pending.request_id, digest=pending.digest, approved=approved, approver="alice"
    )
    return sent.model_copy(update=changes)


async def approval_of(tools: ToolCallClient, workflow_id: str) -> ApprovalRequest:
    found = (await listed_pending(tools, workflow_id))[workflow_id].approval
    assert found is not None
    return found


async def test_decide_with_a_worker_accepts_or_rejects_with_the_reason(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await tools.start(write_request("a"))
        pending = await approval_of(tools, handle.id)

        stale = await tools.decide(handle.id, decision(pending, request_id="old-request"))
        assert (stale.delivery, stale.ok, stale.record) == (Delivery.REJECTED, False, None)
        assert stale.reason == "unknown or stale request id 'old-request'"
        forged = await tools.decide(handle.id, decision(pending, digest="0" * 64))
        assert forged.delivery is Delivery.REJECTED
        assert forged.reason == "digest does not match the pending request"
        types = await history_types(handle)
        assert not UPDATE_EVENTS & set(types)
        assert SIGNALED not in types
        assert (await tools.status(handle.id)).state.pending_approval == pending

        accepted = await tools.decide(handle.id, decision(pending, reason="looks right"))
        result = await asyncio.wait_for(handle.result(), 30)

    assert (accepted.delivery, accepted.ok, accepted.reason) == (Delivery.ACCEPTED, True, None)
    record = accepted.record
    assert isinstance(record, ApprovalRecord)
    assert (record.request_id, record.digest) == (pending.request_id, pending.digest)
    assert (record.approved, record.approver, record.reason, record.via) == (
        True,
        "alice",
        "looks right",
        "update",
    )
    assert result.status is CallStatus.COMPLETED
    assert result.approval == record
    assert probes.runs == {"probe_write": 1}
    assert (await history_types(handle)).count(
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ) == 1

    with pytest.raises(NoPendingRequest, match="the call has ended"):
        await tools.decide(handle.id, decision(pending))


async def test_decide_without_a_worker_is_queued_and_applied_later(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    config = make_config(task_queue)
    async with running_worker(client, config):
        approved = await tools.start(write_request("b"))
        denied = await tools.start(write_request("c"))
        found = await listed_pending(tools, approved.id, denied.id)

    # The worker has just stopped: its pollers still look fresh, but nobody answers.
    first = found[approved.id].approval
    assert first is not None
    queued = await asyncio.wait_for(
        tools.decide(approved.id, decision(first, approver="bob", reason="ok")), 20
    )
    assert (queued.delivery, queued.ok, queued.record) == (Delivery.QUEUED, True, None)
    refused = await asyncio.wait_for(tools.deny(denied.id, approver="carol", reason="no"), 20)
    assert refused.delivery is Delivery.QUEUED
    assert SIGNALED in await history_types(approved)
    # Queued, not applied: both still wait, and still show as pending.
    assert (await tools.status(approved.id)).state.phase is Phase.AWAITING_APPROVAL
    await listed_pending(tools, approved.id, denied.id)

    async with running_worker(client, config) as probes:
        ok, no = await asyncio.wait_for(asyncio.gather(approved.result(), denied.result()), 30)
    assert ok.status is CallStatus.COMPLETED
    assert ok.approval is not None
    assert (ok.approval.approver, ok.approval.reason, ok.approval.via) == ("bob", "ok", "signal")
    assert ok.approval.request_id == first.request_id
    assert no.status is CallStatus.DENIED
    assert no.error is not None
    assert no.error.code is ErrorCode.APPROVAL_DENIED
    assert no.error.message == "probe_write: denied by carol: no"
    assert probes.runs == {"probe_write": 1}
    assert not UPDATE_EVENTS & set(await history_types(approved))


async def test_approve_and_deny_find_the_request_themselves(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)) as probes:
        yes = await tools.start(write_request("d"))
        no = await tools.start(write_request("e"))
        found = await listed_pending(tools, yes.id, no.id)
        approved = await tools.approve(yes.id, approver="alice", reason="fine")
        denied = await tools.deny(no.id, approver="bob", reason="wrong file")
        results = await asyncio.wait_for(asyncio.gather(yes.result(), no.result()), 30)

    for outcome, workflow_id, verdict in ((approved, yes.id, True), (denied, no.id, False)):
        pending = found[workflow_id].approval
        assert pending is not None
        assert outcome.delivery is Delivery.ACCEPTED
        assert isinstance(outcome.record, ApprovalRecord)
        assert (outcome.record.request_id, outcome.record.digest) == (
            pending.request_id,
            pending.digest,
        )
        assert (outcome.record.approved, outcome.record.via) == (verdict, "update")
    assert [r.status for r in results] == [CallStatus.COMPLETED, CallStatus.DENIED]
    assert results[0].output["approved_by"] == "alice"
    assert results[1].error is not None
    assert results[1].error.message == "probe_write: denied by bob: wrong file"
    assert probes.runs == {"probe_write": 1}


async def test_answer_text_or_decline_with_a_worker(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)):
        text = await tools.start(question_request())
        declined = await tools.start(question_request())
        found = await listed_pending(tools, text.id, declined.id)
        blank = await tools.answer(text.id, "  ")
        assert (blank.delivery, blank.reason) == (
            Delivery.REJECTED,
            "the answer is blank; send null to decline",
        )
        answered = await tools.answer(text.id, "CSV", responder="dana")
        refused = await tools.answer(declined.id, None)
        results = await asyncio.wait_for(asyncio.gather(text.result(), declined.result()), 30)

    asked = found[text.id].question
    assert asked is not None
    assert answered.delivery is Delivery.ACCEPTED
    assert answered.record == AskUserOutput(
        request_id=asked.request_id, status=QuestionStatus.ANSWERED, answer="CSV"
    )
    assert refused.delivery is Delivery.ACCEPTED
    assert isinstance(refused.record, AskUserOutput)
    assert (refused.record.status, refused.record.answer) == (QuestionStatus.DECLINED, None)
    assert [r.output["status"] for r in results] == ["answered", "declined"]
    assert results[0].output["answer"] == "CSV"
    assert results[0].events[-2].message == "by dana"
    answer_events = [e.kind for r in results for e in r.events if e.kind.startswith("question_")]
    assert answer_events == [
        EventKind.QUESTION_ASKED,
        EventKind.QUESTION_ANSWERED,
        EventKind.QUESTION_ASKED,
        EventKind.QUESTION_DECLINED,
    ]


async def test_answer_without_a_worker_is_queued(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    config = make_config(task_queue)
    async with running_worker(client, config):
        text = await tools.start(question_request())
        declined = await tools.start(question_request())
        await listed_pending(tools, text.id, declined.id)

    answered = await asyncio.wait_for(tools.answer(text.id, "JSON", responder="erin"), 20)
    refused = await asyncio.wait_for(tools.answer(declined.id, None), 20)
    assert (answered.delivery, refused.delivery) == (Delivery.QUEUED, Delivery.QUEUED)
    assert answered.record is None
    assert SIGNALED in await history_types(text)

    async with running_worker(client, config):
        results = await asyncio.wait_for(asyncio.gather(text.result(), declined.result()), 30)
    assert [(r.output["status"], r.output["answer"]) for r in results] == [
        ("answered", "JSON"),
        ("declined", None),
    ]
    assert results[0].events[-2].message == "by erin"


async def test_a_decision_no_worker_takes_in_time_goes_as_the_signal_and_is_applied_once(
    client: Client, task_queue: str
) -> None:
    # The worker has just stopped: its pollers look fresh, so the decision goes as the update,
    # which nobody takes within the probe; the signal follows. When a worker returns, the
    # decision is applied once, by the signal: had the update reached it, it would have been
    # refused as late, leaving nothing in history (the test below).
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    config = make_config(task_queue)
    async with running_worker(client, config) as probes:
        write = await tools.start(write_request("d"))
        ask = await tools.start(question_request())
        found = await listed_pending(tools, write.id, ask.id)

    pending = found[write.id].approval
    assert pending is not None
    queued = await asyncio.wait_for(tools.decide(write.id, decision(pending, approver="bob")), 20)
    said = await asyncio.wait_for(tools.answer(ask.id, "later", responder="erin"), 20)
    assert (queued.delivery, said.delivery) == (Delivery.QUEUED, Delivery.QUEUED)
    assert SIGNALED in await history_types(write)
    assert SIGNALED in await history_types(ask)

    async with running_worker(client, config, probes):
        done, reply = await asyncio.wait_for(asyncio.gather(write.result(), ask.result()), 30)
    assert done.status is CallStatus.COMPLETED
    assert done.approval is not None
    assert (done.approval.approver, done.approval.via) == ("bob", "signal")
    assert probes.runs == {"probe_write": 1}
    assert reply.output is not None
    assert (reply.output["status"], reply.output["answer"]) == ("answered", "later")
    for call in (done, reply):
        assert EventKind.SIGNAL_IGNORED not in [event.kind for event in call.events]
    for handle in (write, ask):
        assert not UPDATE_EVENTS & set(await history_types(handle))


class BehindTheServer(ToolCallClient):
    """A client whose clock is an hour behind the server's: every update it sends is late."""

    def _deliver_by(self) -> datetime:
        return datetime.now(UTC) - timedelta(hours=1)


async def test_a_late_update_is_refused_and_the_client_sends_the_signal(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)) as probes:
        write = await tools.start(write_request("late"))
        ask = await tools.start(question_request())
        pending = await approval_of(tools, write.id)
        await listed_pending(tools, ask.id)
        # Sent straight to the workflow, a late update is refused with its own error type.
        late = deliver_by_id(datetime.now(UTC) - timedelta(seconds=30))
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await write.execute_update(ToolCallWorkflow.decide, decision(pending), id=late)
        cause = refused.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == LATE_UPDATE
        assert cause.message.startswith("the update arrived at ")
        assert not UPDATE_EVENTS & set(await history_types(write))
        assert (await tools.status(write.id)).state.phase is Phase.AWAITING_APPROVAL
        # The client whose updates all arrive late falls back to the signal, applied at once.
        behind = BehindTheServer(client, task_queue=task_queue, probe_timeout=PROBE)
        decided = await behind.decide(write.id, decision(pending, approver="bob"))
        said = await behind.answer(ask.id, "CSV", responder="erin")
        done, reply = await asyncio.wait_for(asyncio.gather(write.result(), ask.result()), 30)
    assert (decided.delivery, said.delivery) == (Delivery.QUEUED, Delivery.QUEUED)
    assert done.approval is not None
    assert (done.status, done.approval.approver, done.approval.via) == (
        CallStatus.COMPLETED,
        "bob",
        "signal",
    )
    assert probes.runs == {"probe_write": 1}
    assert reply.output is not None
    assert (reply.output["status"], reply.output["answer"]) == ("answered", "CSV")


async def test_a_taken_update_whose_record_is_late_is_accepted_without_one(
    client: Client, task_queue: str
) -> None:
    # An edit is planned and previewed again before its approval's record exists; a client that
    # stops waiting for the record must not send the signal after an update the call has taken.
    tools = ToolCallClient(
        client, task_queue=task_queue, probe_timeout=PROBE, update_timeout=timedelta(seconds=0.2)
    )
    async with running_worker(client, make_config(task_queue)) as probes:
        write = await tools.start(write_request("draft"))
        pending = await approval_of(tools, write.id)
        probes.prepare_delay = 2.0  # the edit's preview: the record comes 2 s after the update
        edited = decision(pending, approver="alice", arguments={"token": "final"})
        outcome = await tools.decide(write.id, edited)
        done = await asyncio.wait_for(write.result(), 30)
    assert (outcome.delivery, outcome.record, outcome.reason) == (
        Delivery.ACCEPTED,
        None,
        STILL_APPLYING,
    )
    assert done.status is CallStatus.COMPLETED
    assert done.approval is not None
    assert (done.approval.approver, done.approval.via) == ("alice", "update")
    assert [edit.edited for edit in done.edits] == [{"token": "final"}]
    assert probes.runs == {"probe_write": 1}
    assert SIGNALED not in await history_types(write)


class EndsFirst(ToolCallClient):
    """A client for which each call of ``ending``, in turn, ends between its describe and its
    decision's signal (sent at once: no worker serves the call's queue, it says)."""

    ending: list[Any]

    async def worker_serving(self, task_queue: str) -> bool:
        await self.ending.pop(0).terminate("ended while the decision was on its way")
        return False


async def test_a_signal_to_a_call_that_ended_after_its_describe_is_rejected_not_raised(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)):
        write = await tools.start(write_request("e"))
        ask = await tools.start(question_request())
        pending = await approval_of(tools, write.id)
        await listed_pending(tools, ask.id)

        ends = EndsFirst(client, task_queue=task_queue, probe_timeout=PROBE)
        ends.ending = [write, ask]
        decided = await ends.decide(write.id, decision(pending))
        said = await ends.answer(ask.id, "too late")

    assert (decided.delivery, decided.reason) == (Delivery.REJECTED, "the call has ended")
    assert (said.delivery, said.reason) == (Delivery.REJECTED, "the call has ended")
    assert SIGNALED not in await history_types(write)
    assert (await write.describe()).status is WorkflowExecutionStatus.TERMINATED


async def test_nothing_pending_raises_or_is_rejected(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)):
        ask = await tools.start(question_request())
        write = await tools.start(write_request("f"))
        found = await listed_pending(tools, ask.id, write.id)
        pending = found[write.id].approval
        assert pending is not None

        with pytest.raises(NoPendingRequest, match="no approval is pending"):
            await tools.approve(ask.id)
        with pytest.raises(NoPendingRequest, match="no approval is pending"):
            await tools.deny(ask.id)
        with pytest.raises(NoPendingRequest, match="no question is pending"):
            await tools.answer(write.id, "yes")
        # A decision sent straight to a call that asks a question: the validator refuses it.
        wrong = await tools.decide(ask.id, decision(pending))
        assert (wrong.delivery, wrong.reason) == (Delivery.REJECTED, "no approval is pending")

        await tools.answer(ask.id, "JSON")
        await tools.deny(write.id)
        finished = await asyncio.wait_for(tools.call(ToolCallRequest(tool="current_datetime")), 30)
        await asyncio.wait_for(asyncio.gather(ask.result(), write.result()), 30)

        for workflow_id in (ask.id, write.id, finished.workflow_id):
            with pytest.raises(NoPendingRequest, match="no approval is pending"):
                await tools.approve(workflow_id)
            with pytest.raises(NoPendingRequest, match="no question is pending"):
                await tools.answer(workflow_id, None)
            with pytest.raises(NoPendingRequest, match="the call has ended"):
                await tools.decide(workflow_id, decision(pending))
    assert (await write.describe()).status is WorkflowExecutionStatus.COMPLETED


def summary(call: PendingCall) -> str:
    """What a UI shows for one pending call, from ``pending()`` output alone."""
    expires = call.expires_at.isoformat(timespec="seconds") if call.expires_at else "never"
    if call.approval is not None:
        args = json.dumps(call.approval.arguments, sort_keys=True)
        diffs = [a.text for a in call.approval.preview if a.kind == "diff"]
        return (
            f"approve {call.tool}({args}) needing {', '.join(call.capabilities)}; "
            f"diff {diffs!r}; expires {expires}"
        )
    assert call.question is not None
    options = " / ".join(call.question.options)
    return f"answer {call.tool}: {call.question.question} [{options}]; expires {expires}"


async def test_a_ui_renders_pending_calls_from_pending_alone(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)):
        write = await tools.start(write_request("ui", approval_timeout=timedelta(hours=1)))
        forever = await tools.start(write_request("later", approval_timeout=None))
        ask = await tools.start(question_request())
        await listed_pending(tools, write.id, forever.id, ask.id)

    # No worker runs: everything below comes from one visibility query.
    ours = {write.id, forever.id, ask.id}
    calls = [call for call in await tools.pending() if call.workflow_id in ours]
    lines = {call.workflow_id: summary(call) for call in calls}
    by_id = {call.workflow_id: call for call in calls}
    requested = by_id[write.id].approval
    asked = by_id[ask.id].question
    assert requested is not None
    assert asked is not None
    in_an_hour = (requested.requested_at + timedelta(hours=1)).isoformat(timespec="seconds")
    in_five_minutes = (asked.asked_at + timedelta(minutes=5)).isoformat(timespec="seconds")
    assert lines == {
        write.id: 'approve probe_write({"token": "ui"}) needing filesystem.write; '
        f"diff ['+ui\\n']; expires {in_an_hour}",
        forever.id: 'approve probe_write({"token": "later"}) needing filesystem.write; '
        "diff ['+later\\n']; expires never",
        ask.id: f"answer ask_user: {ASK['question']} [JSON / CSV]; expires {in_five_minutes}",
    }
    for handle in (write, forever, ask):
        await handle.terminate(reason="test over")


async def test_decisions_and_answers_too_large_are_refused_before_they_are_sent(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    over = rf"is \d+ bytes encoded; the limit is {PAYLOAD_LIMIT_BYTES} bytes$"
    async with running_worker(client, make_config(task_queue)):
        write = await tools.start(write_request("big"))
        ask = await tools.start(question_request())
        pending = await approval_of(tools, write.id)
        await listed_pending(tools, ask.id)
        huge = decision(pending, request_id="r" * (3 * 1024 * 1024))
        with pytest.raises(PayloadTooLarge, match="^the decision " + over):
            await tools.decide(write.id, huge)
        with pytest.raises(PayloadTooLarge, match="^the answer " + over):
            await tools.answer(ask.id, "x" * (3 * 1024 * 1024))
        # Nothing reached either call: both still wait, and take a decision that fits.
        for handle in (write, ask):
            types = set(await history_types(handle))
            assert not types & {SIGNALED, *UPDATE_EVENTS}
        assert (await tools.decide(write.id, decision(pending))).delivery is Delivery.ACCEPTED
        assert (await tools.answer(ask.id, "CSV")).delivery is Delivery.ACCEPTED
        results = await asyncio.wait_for(asyncio.gather(write.result(), ask.result()), 30)
    assert [r.status for r in results] == [CallStatus.COMPLETED] * 2


class _EndedHandle:
    """A handle whose workflow ended while the update was on its way: signals are refused."""

    async def signal(self, signal: Any, payload: object) -> None:
        raise RPCError("workflow execution already completed", RPCStatusCode.NOT_FOUND, b"")


async def test_an_update_that_timed_out_on_a_call_that_ended_is_rejected_not_raised() -> None:
    # The update was delivered after its RPC timed out and the call ended: the fallback signal
    # has nothing to reach, which is the outcome of a decision sent to an ended call.
    outcome = await signal_after_timeout(
        _EndedHandle(),  # type: ignore[arg-type]
        WorkflowUpdateRPCTimeoutOrCancelledError(),
        ToolCallWorkflow.approve,
        {},
    )
    assert (outcome.delivery, outcome.reason) == (Delivery.REJECTED, "the call has ended")


async def test_an_update_applied_after_its_rpc_timed_out_is_accepted_not_rejected(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Right after a worker restart an update can outlive its RPC timeout and still be applied; the
    # call then ends before the fallback signal reaches it. The decision was applied: the result
    # says so, and the client must not report it rejected.
    real = WorkflowHandle.start_update
    applied = True

    async def delivered_then_timed_out(self: Any, update: Any, arg: Any, **kwargs: Any) -> Any:
        if applied:
            await (await real(self, update, arg, **kwargs)).result()
            await self.result()
        else:
            await self.terminate("ended while the update was on its way")
        raise WorkflowUpdateRPCTimeoutOrCancelledError()

    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)) as probes:
        write = await tools.start(write_request("f"))
        ask = await tools.start(question_request())
        lost = await tools.start(write_request("g"))
        found = await listed_pending(tools, write.id, ask.id, lost.id)
        monkeypatch.setattr(WorkflowHandle, "start_update", delivered_then_timed_out)
        pending = found[write.id].approval
        assert pending is not None
        decided = await tools.decide(write.id, decision(pending, approver="carol", reason="ok"))
        said = await tools.answer(ask.id, "Parquet", responder="dana")
        applied = False
        pending = found[lost.id].approval
        assert pending is not None
        never = await tools.decide(lost.id, decision(pending))

    assert decided.delivery is Delivery.ACCEPTED
    assert isinstance(decided.record, ApprovalRecord)
    assert (decided.record.approver, decided.record.reason, decided.record.via) == (
        "carol",
        "ok",
        "update",
    )
    assert probes.runs == {"probe_write": 1}
    assert said.delivery is Delivery.ACCEPTED
    assert isinstance(said.record, AskUserOutput)
    assert (said.record.status, said.record.answer) == (QuestionStatus.ANSWERED, "Parquet")
    # A call that ended without applying it: the decision was not applied, and is rejected.
    assert (never.delivery, never.reason) == (Delivery.REJECTED, "the call has ended")


async def test_a_task_queue_the_server_is_too_busy_to_describe_counts_as_unserved(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server busy with thousands of calls let DescribeTaskQueue run past the SDK's timeout:
    # the decision must take the signal, not fail with the RPC's error.
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)

    async def too_busy(*args: object, **kwargs: object) -> None:
        raise RPCError("operation was canceled", RPCStatusCode.CANCELLED, b"")

    monkeypatch.setattr(tools.client.workflow_service, "describe_task_queue", too_busy)
    assert await tools.worker_serving(task_queue) is False


def test_an_update_id_carries_its_deadline_to_the_millisecond_and_others_carry_none() -> None:
    deadline = datetime(2026, 12, 3, 13, 48, 5, 123000, tzinfo=UTC)
    first, second = deliver_by_id(deadline), deliver_by_id(deadline)
    assert first != second  # each update its own id: the server deduplicates by id
    assert deliver_by_of(first) == deliver_by_of(second) == deadline
    for other in ("", "3f2a-update", "toolcalls-deliver-by:soon:x", "toolcalls-deliver-by:"):
        assert deliver_by_of(other) is None
