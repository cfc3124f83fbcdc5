"""Decisions on the pending request of ``ToolCallWorkflow``: the ``approve`` and ``deny`` signals,
the checks every decision passes (the ``decide`` update's validator applies the same ones), and
how an accepted decision is recorded.

``Decisions`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``). An
approver's name is compared and recorded in its canonical form
(``toolcalls.workflows.rules.identities``), so ``Alice``, ``alice `` and the full-width form are one
approver to the two-person rule, and a name with an invisible character is refused. Calls that
took a decision before that (``IDENTITY_PATCH``) keep comparing names as they were sent.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from temporalio import workflow

from toolcalls.workflows.call import telemetry
from toolcalls.workflows.call.approval_requests import ApprovalRequests
from toolcalls.workflows.models.approval import ApprovalRecord, DecisionInput, GrantScope
from toolcalls.workflows.models.call import EventKind
from toolcalls.workflows.rules.identities import InvalidIdentity, canonical_identity

IDENTITY_PATCH = "approver-identity-normalised"
"""Approver names are canonicalised before they are compared or recorded; one with an invisible
character is refused. Asked once per call, by the first decision handler."""

RESPOND_PATCH = "toolcalls-respond-decision"
"""A denial may carry an answer in place of the tool (``DecisionInput.response``). Asked by the
handler that takes such a decision: a worker from before it could not read one (it refused the
update and ignored the signal), so a history without the marker replays that way."""

_Decision = TypeVar("_Decision", bound=DecisionInput)

Edit = tuple[DecisionInput, str, int, bool]
"""A queued edit: the decision, how it came (``update``, ``signal``), its number, whether it
approves."""


class Decisions(ApprovalRequests):
    """The checks and the recording of decisions, and the signals that carry them."""

    _edit_queue: list[Edit]
    _edits_sent: int
    _grant_queue: list[tuple[ApprovalRecord, DecisionInput]]
    _notifications: list[asyncio.Task[None]]
    _identities: bool | None = None
    """Whether names are canonical (``IDENTITY_PATCH``); ``None`` until a handler asks."""

    def _canonical_names(self) -> None:
        """Decide, at the first decision a handler takes, how this call compares names.

        A handler, not the wait: a validator cannot ask for a patch, and a patch asked right
        after the plan's local activity is seen too late on replay. A validator asked before
        any handler assumes what a handler of this code would decide; validators never run on
        replay, so old histories take the old branch only through the handlers.
        """
        if self._identities is None:
            self._identities = workflow.patched(IDENTITY_PATCH)

    def _canonical(self, decision: _Decision) -> _Decision:
        """``decision`` with its approver's canonical name (``_decision_problem`` passed it).

        Raises:
            InvalidIdentity: the name holds an invisible character.
        """
        if self._identities is False:
            return decision
        approver = canonical_identity(decision.approver)
        if approver == decision.approver:
            return decision
        return decision.model_copy(update={"approver": approver})

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
        self._canonical_names()
        verb = "approve" if approved else "deny"
        decision = self._parse_signal(DecisionInput, payload, verb)
        if decision is None:
            telemetry.decision_refused("signal", "ignored")
            return
        problem = self._decision_problem(decision, approved) or self._response_problem(decision)
        if problem:
            telemetry.decision_refused("signal", "ignored")
            self._event(
                EventKind.SIGNAL_IGNORED,
                f"{verb} from {decision.approver or 'an unnamed sender'}: {problem}",
            )
            return
        decision = self._canonical(decision)
        if decision.arguments is not None:
            self._queue_edit(decision, "signal")
            return
        self._accept(decision, approved, "signal")

    def _response_problem(self, decision: DecisionInput) -> str | None:
        """Why this run cannot take ``decision``'s response (it was recorded before responses
        existed), or ``None``; asks ``RESPOND_PATCH``, so only a handler calls it, after the
        checks every decision passes."""
        if decision.response is None or workflow.patched(RESPOND_PATCH):
            return None
        return "this worker does not take answers in place of the tool"

    def _decision_problem(self, decision: DecisionInput, approved: bool) -> str | None:
        """Why ``decision`` cannot be taken now, or ``None``; the same for updates and signals."""
        approvals = self._approvals
        if approvals is None or (self._pending_approval is None and not approvals.decided):
            return "no approval is pending"
        if self._edit_queue:
            return "an edit of this request is being applied; decide on the request it gives"
        try:
            decision = self._canonical(decision)
        except InvalidIdentity as exc:
            return str(exc)
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
        elif record.response is not None:
            self._event(EventKind.RESPONDED, f"by {who} via {via}{because}: the tool will not run")
        else:
            kind = EventKind.APPROVAL_GRANTED if approved else EventKind.APPROVAL_DENIED
            self._event(kind, f"by {who} via {via}{because}")
        if approved and decision.remember is not None:
            self._grant_queue.append((record, decision))
        return record

    def _queue_edit(self, decision: DecisionInput, via: str, *, approve: bool = True) -> int:
        """Hand an edit to the main loop (planning needs an activity); its number."""
        self._edits_sent += 1
        self._edit_queue.append((decision, via, self._edits_sent, approve))
        return self._edits_sent
