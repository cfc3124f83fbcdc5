"""The approval wait of ``ToolCallWorkflow``: grants, decisions, edits, reminders, escalation and
notifications (``toolcalls.workflows.call.approval_requests`` prepares and publishes the request,
``decisions`` checks and records decisions, ``edits`` applies edited arguments).

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
from temporalio.exceptions import ApplicationError

from toolcalls.workflows.call import telemetry
from toolcalls.workflows.call.approvals import Approvals
from toolcalls.workflows.call.deadlines import refuse_late
from toolcalls.workflows.call.decisions import Edit
from toolcalls.workflows.call.edits import EDIT_REFUSED_PATCH, Edits
from toolcalls.workflows.call.parts import _Ended
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    DecisionInput,
    EditProposal,
)
from toolcalls.workflows.models.call import CallPlan, CallStatus, ErrorCode, EventKind
from toolcalls.workflows.rules import policy


class ApprovalFlow(Edits):
    """Everything ``ToolCallWorkflow`` does between "this needs a human" and "approved"."""

    def _init_approvals(self) -> None:
        self._edit_queue: list[Edit] = []
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
        if final.response is not None:
            outcome = "responded"
        telemetry.approval_ended(self._call_id, plan.tool, outcome, self._waited)
        if not final.approved:
            who = final.approver or "an unnamed approver"
            because = f": {final.reason}" if final.reason else ""
            if final.response is not None:
                raise _Ended(
                    self._end(
                        CallStatus.DENIED,
                        ErrorCode.RESPONDED,
                        f"{plan.tool}: {who} answered in place of the tool{because}",
                    )
                )
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
        self._canonical_names()
        problem = self._decision_problem(decision, decision.approved) or self._response_problem(
            decision
        )
        if problem:
            raise ApplicationError(problem, type="rejected", non_retryable=True)
        decision = self._canonical(decision)
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
        self._canonical_names()
        decision = proposal.as_decision()
        problem = self._decision_problem(decision, True)
        if problem:
            raise ApplicationError(problem, type="rejected", non_retryable=True)
        decision = self._canonical(decision)
        outcome = await self._edit_outcome(self._queue_edit(decision, "update", approve=False))
        assert isinstance(outcome, ApprovalRequest)
        return outcome

    @edit.validator
    def _validate_edit(self, proposal: EditProposal) -> None:
        problem = self._decision_problem(proposal.as_decision(), True)
        if problem:
            raise ValueError(problem)
