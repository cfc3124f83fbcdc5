"""The approval wait of ``ToolCallWorkflow``: grants, decisions, edits, reminders, escalation and
notifications (``toolcalls.workflows.call.approval_requests`` prepares and publishes the request).

A call that needs an approval first asks whether a standing grant approves it (when the
deployment allows grants). Otherwise it publishes an ``ApprovalRequest`` and waits, with one timer
to the next thing due (a reminder, the escalation, the expiry), for decisions from the approvers
its plan allows: the ``decide`` update (its validator refuses before anything is written) or the
``approve``/``deny`` signals (a refused one is logged and ignored). One denial ends the call;
``min_approvals`` distinct approvals approve it. An approval may carry edited arguments (the call
is planned and prepared again and the approval binds to the new digest; an edit the plan or the
tool's preview refuses is refused, and the request waits on) and may be remembered (a
``ToolCallGrant`` child workflow). Notifications run beside the wait and never hold it up.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from toolcalls.workflows.call import telemetry
from toolcalls.workflows.call.approval_requests import ApprovalRequests
from toolcalls.workflows.call.approvals import Approvals, allowed_names
from toolcalls.workflows.call.deadlines import refuse_late
from toolcalls.workflows.call.grants_and_notices import _short
from toolcalls.workflows.call.parts import _Ended, _Refused
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    ArgumentEdit,
    DecisionInput,
    EditProposal,
    GrantScope,
)
from toolcalls.workflows.models.call import (
    CallPlan,
    CallStatus,
    Effect,
    ErrorCode,
    EventKind,
    Phase,
)
from toolcalls.workflows.rules import policy

FIND_GRANT_TIMEOUT = timedelta(seconds=10)
NOTIFY_TIMEOUT = timedelta(seconds=30)
NOTIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_attempts=3
)
MAX_SUMMARY_CHARS = 500
EDIT_REFUSED_PATCH = "edit-refused-keeps-waiting"
"""An edit whose preview the tool refuses is refused and the call waits on; an edit's update
answers when the call ends first; decisions wait until an edit is applied."""
EDIT_FAULTS = frozenset(
    {
        ErrorCode.INVALID_ARGUMENTS,
        ErrorCode.POLICY_DENIED,
        ErrorCode.PRECONDITION_FAILED,
        ErrorCode.OUTPUT_TOO_LARGE,
    }
)
"""The codes of a preview's failure that are the edited arguments' fault: the edit is refused.
Any other failure (the tool failed, timed out, no worker took it) ends the call as before."""


class ApprovalFlow(ApprovalRequests):
    """Everything ``ToolCallWorkflow`` does between "this needs a human" and "approved"."""

    def _init_approvals(self) -> None:
        self._edit_queue: list[tuple[DecisionInput, str, int, bool]] = []
        """Approvals with edited arguments, waiting for the main loop to plan them again."""
        self._edit_results: dict[int, ApprovalRecord | ApprovalRequest | str] = {}
        """Each processed edit's outcome by its number: the new record, or why refused."""
        self._edits_sent = 0
        self._grant_queue: list[tuple[ApprovalRecord, DecisionInput]] = []
        self._notifications: list[asyncio.Task[None]] = []

    async def _approved(self, plan: CallPlan, decision: policy.Decision) -> CallPlan:
        """Return the plan to run once approved (edited arguments give a new one); end the call
        otherwise."""
        rule = plan.approval_rule
        if rule is not None and rule.approvers == []:
            raise _Ended(
                self._end(
                    CallStatus.DENIED,
                    ErrorCode.POLICY_DENIED,
                    f"{plan.tool}: no approver may decide this call (the matching [approvers] "
                    f"rules {', '.join(rule.rules)} allow no one in common)",
                )
            )
        if rule is not None and rule.max_grant is not None and await self._granted(plan):
            return plan
        await self._request_approval(plan, decision)
        reminders = 0
        while True:
            approvals = self._approvals
            assert approvals is not None
            now = workflow.now()
            deadline = approvals.request.expires_at
            due = [t for t in (deadline, self._next_tick(approvals, reminders)) if t is not None]
            # Without reminders or escalation this is one wait for the approval timeout (or none,
            # without a timer), as it was before rules existed: recorded histories replay.
            timeout = min(due) - now if due else None
            done = await self._wait(self._settled, timeout)
            if self._edit_queue:
                if workflow.patched(EDIT_REFUSED_PATCH):
                    # Queued until applied: decisions on the request are refused meanwhile.
                    plan = await self._apply_edit(plan, *self._edit_queue[0], refuse=True)
                    self._edit_queue.pop(0)
                else:
                    plan = await self._apply_edit(plan, *self._edit_queue.pop(0))
                continue
            if done:
                break
            now = workflow.now()
            if deadline is not None and now >= deadline:
                self._expired(plan)
            rule = approvals.rule
            escalate_at = approvals.request.requested_at + (rule.escalate_after or timedelta(0))
            if rule.escalate_after and not approvals.escalated and now >= escalate_at:
                approvals.escalated = True
                self._republish()
                self._event(EventKind.ESCALATED, f"may now decide: {', '.join(approvals.shown)}")
                self._notify(plan, "escalated")
                continue
            if rule.remind_every:
                reminders += 1
                self._event(EventKind.REMINDER, f"reminder {reminders}: still waiting")
                self._notify(plan, "reminder")
        self._clear_pending()
        approvals = self._approvals
        assert approvals is not None
        final = approvals.final
        assert final is not None
        self._approval = final
        outcome = "approved" if final.approved else "denied"
        telemetry.approval_ended(self._call_id, plan.tool, outcome, self._waited)
        if not final.approved:
            who = final.approver or "an unnamed approver"
            because = f": {final.reason}" if final.reason else ""
            raise _Ended(
                self._end(
                    CallStatus.DENIED,
                    ErrorCode.APPROVAL_DENIED,
                    f"{plan.tool}: denied by {who}{because}",
                )
            )
        self._approved_by = list(approvals.records)
        while self._grant_queue:
            await self._remember(plan, *self._grant_queue.pop(0))
        self._check_budget()
        return plan

    def _settled(self) -> bool:
        """Decided, or an edit waits to be applied."""
        return bool(self._edit_queue) or (self._approvals is not None and self._approvals.decided)

    def _next_tick(self, approvals: Approvals, reminders: int) -> Any:
        """When the next reminder or the escalation is due, if either is."""
        rule = approvals.rule
        start = approvals.request.requested_at
        ticks = []
        if rule.escalate_after and not approvals.escalated:
            ticks.append(start + rule.escalate_after)
        if rule.remind_every:
            ticks.append(start + rule.remind_every * (reminders + 1))
        return min(ticks, default=None)

    def _expired(self, plan: CallPlan) -> None:
        self._clear_pending()
        self._event(EventKind.APPROVAL_TIMED_OUT, "no decision before the request expired")
        telemetry.approval_ended(self._call_id, plan.tool, "timed_out", self._waited)
        self._check_budget(during_wait=True)
        raise _Ended(
            self._end(
                CallStatus.DENIED,
                ErrorCode.APPROVAL_TIMED_OUT,
                f"{plan.tool}: no approval decision within the approval timeout",
            )
        )

    # Decisions ------------------------------------------------------------------------------

    @workflow.update
    async def decide(self, decision: ApprovalDecision) -> ApprovalRecord:
        """Approve or deny the pending request; with ``arguments``, approve an edited call."""
        problem = self._decision_problem(decision, decision.approved)
        if problem:
            raise ApplicationError(problem, type="rejected", non_retryable=True)
        if decision.arguments is not None:
            outcome = await self._edit_outcome(self._queue_edit(decision, "update"))
            assert isinstance(outcome, ApprovalRecord)
            return outcome
        return self._accept(decision, decision.approved, "update")

    @decide.validator
    def _validate_decide(self, decision: ApprovalDecision) -> None:
        refuse_late()
        problem = self._decision_problem(decision, decision.approved)
        if problem:
            telemetry.decision_refused("update", "rejected")
            raise ValueError(problem)

    @workflow.update
    async def edit(self, proposal: EditProposal) -> ApprovalRequest:
        """Propose other arguments without approving: the call is planned and prepared again and
        the new request (new id, digest and preview) waits for decisions. An approver who wants
        to see the edited preview before approving edits first, then approves."""
        decision = proposal.as_decision()
        problem = self._decision_problem(decision, True)
        if problem:
            raise ApplicationError(problem, type="rejected", non_retryable=True)
        outcome = await self._edit_outcome(self._queue_edit(decision, "update", approve=False))
        assert isinstance(outcome, ApprovalRequest)
        return outcome

    @edit.validator
    def _validate_edit(self, proposal: EditProposal) -> None:
        problem = self._decision_problem(proposal.as_decision(), True)
        if problem:
            raise ValueError(problem)

    @workflow.signal
    def approve(self, decision: Any) -> None:
        """Fire-and-forget approval (a ``DecisionInput``); an invalid one is logged and ignored.

        Signals take any JSON and validate it here: the SDK would drop a payload that failed to
        decode against a model without a trace, and an ignored signal must leave one.
        """
        self._signal_decision(decision, approved=True)

    @workflow.signal
    def deny(self, decision: Any) -> None:
        """Fire-and-forget denial (a ``DecisionInput``); an invalid one is logged and ignored."""
        self._signal_decision(decision, approved=False)

    def _signal_decision(self, payload: Any, *, approved: bool) -> None:
        verb = "approve" if approved else "deny"
        decision = self._parse_signal(DecisionInput, payload, verb)
        if decision is None:
            telemetry.decision_refused("signal", "ignored")
            return
        problem = self._decision_problem(decision, approved)
        if problem:
            telemetry.decision_refused("signal", "ignored")
            self._event(
                EventKind.SIGNAL_IGNORED,
                f"{verb} from {decision.approver or 'an unnamed sender'}: {problem}",
            )
            return
        if decision.arguments is not None:
            self._queue_edit(decision, "signal")
            return
        self._accept(decision, approved, "signal")

    def _decision_problem(self, decision: DecisionInput, approved: bool) -> str | None:
        approvals = self._approvals
        if approvals is None or (self._pending_approval is None and not approvals.decided):
            return "no approval is pending"
        if self._edit_queue:
            return "an edit of this request is being applied; decide on the request it gives"
        problem = approvals.problem(decision, approved, workflow.now())
        remember = decision.remember
        parentless = workflow.info().parent is None
        if problem is None and remember and remember.scope is GrantScope.PARENT and parentless:
            return "a grant for the parent workflow needs a call made by one"
        return problem

    def _accept(self, decision: DecisionInput, approved: bool, via: str) -> ApprovalRecord:
        approvals = self._approvals
        assert approvals is not None
        record = approvals.accept(decision, approved, via, workflow.now())
        telemetry.approval_decision(self._call_id, approvals.request.tool, record)
        # Logged as it is accepted, so that a decision it beat in the same workflow task (and
        # which is logged as ignored at once) comes after it, as in history.
        who = record.approver or "an unnamed approver"
        because = f": {record.reason}" if record.reason else ""
        if approved and not approvals.approved:
            count = f"{len(approvals.records)} of {approvals.rule.min_approvals}"
            self._event(EventKind.APPROVAL_RECORDED, f"by {who} via {via} ({count}){because}")
            self._republish()
        else:
            kind = EventKind.APPROVAL_GRANTED if approved else EventKind.APPROVAL_DENIED
            self._event(kind, f"by {who} via {via}{because}")
        if approved and decision.remember is not None:
            self._grant_queue.append((record, decision))
        return record

    # Edits ----------------------------------------------------------------------------------

    def _queue_edit(self, decision: DecisionInput, via: str, *, approve: bool = True) -> int:
        """Hand an edit to the main loop (planning needs an activity); its number."""
        self._edits_sent += 1
        self._edit_queue.append((decision, via, self._edits_sent, approve))
        return self._edits_sent

    async def _edit_outcome(self, number: int) -> ApprovalRecord | ApprovalRequest:
        """What the main loop made of edit ``number``; raises why it was refused, or (with the
        patch) that the call ended before applying it."""
        answers_end = workflow.patched(EDIT_REFUSED_PATCH)
        await workflow.wait_condition(
            lambda: number in self._edit_results or (answers_end and self._result is not None)
        )
        if number not in self._edit_results:
            ended = self._result
            assert ended is not None
            why = ended.error.message if ended.error else ended.status.value
            raise _rejected(f"the call ended before the edit was applied: {why}")
        outcome = self._edit_results.pop(number)
        if isinstance(outcome, str):
            raise _rejected(outcome)
        return outcome

    async def _apply_edit(
        self,
        plan: CallPlan,
        decision: DecisionInput,
        via: str,
        number: int,
        approve: bool,
        *,
        refuse: bool = False,
    ) -> CallPlan:
        """Plan and prepare the edited arguments; the approver's approval binds to them. With
        ``refuse``, a preview the tool refuses (``EDIT_FAULTS``) refuses the edit as the plan
        does: the original request keeps waiting."""
        old = self._approvals
        assert old is not None
        assert decision.arguments is not None
        outcome = await self._plan_call(decision.arguments)
        refusal = None
        edited = outcome.plan
        if edited is None:
            refusal = outcome.error.message if outcome.error else "the edit could not be planned"
        else:
            verdict = policy.decide(
                edited.ceiling, self._request.policy, edited.tool, edited.capabilities
            )
            allowed = allowed_names(edited.approval_rule)
            if verdict.effect is Effect.DENY:
                refusal = f"the edited call would be denied: {'; '.join(verdict.reasons())}"
            elif allowed is not None and decision.approver not in allowed:
                refusal = (
                    f"{decision.approver!r} may not approve the edited call "
                    f"({', '.join(edited.capabilities) or 'no capabilities'})"
                )
        prepared = None
        if refusal is None and edited is not None and refuse and edited.prepare:
            try:
                prepared = await self._prepare(edited, EDIT_FAULTS)
            except _Refused as refused:
                refusal = refused.reason
                self._set_phase(Phase.AWAITING_APPROVAL)
        if refusal is not None or edited is None:
            self._edit_results[number] = refusal or "refused"
            self._event(EventKind.EDIT_REFUSED, f"by {decision.approver}: {refusal}")
            return plan
        self._edits.append(
            ArgumentEdit(
                by=decision.approver,
                at=workflow.now(),
                original=plan.arguments,
                original_digest=plan.digest,
                edited=edited.arguments,
                digest=edited.digest,
            )
        )
        self._event(
            EventKind.ARGUMENTS_EDITED,
            f"by {decision.approver} via {via}: {_short(plan.arguments)} -> "
            f"{_short(edited.arguments)}",
        )
        self._plan = edited
        verdict = policy.decide(
            edited.ceiling, self._request.policy, edited.tool, edited.capabilities
        )
        await self._request_approval(edited, verdict, old.request.expires_at, prepared)
        approvals = self._approvals
        assert approvals is not None
        if not approve:
            # Proposed only: the new request waits for decisions like any other.
            assert self._pending_approval is not None
            self._edit_results[number] = self._pending_approval
            return edited
        bound = decision.model_copy(
            update={
                "request_id": approvals.request.request_id,
                "digest": edited.digest,
                "arguments": None,
            }
        )
        self._edit_results[number] = self._accept(bound, True, via)
        return edited


def _rejected(reason: str) -> ApplicationError:
    """An update's failure for an edit the workflow refused after its validator let it in."""
    return ApplicationError(
        reason, type="rejected", non_retryable=True, category=ApplicationErrorCategory.BENIGN
    )
