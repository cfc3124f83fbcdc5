"""The state of one approval wait: who may decide, what has been decided, and what it takes.

Pure bookkeeping for ``ToolCallWorkflow`` (no temporalio, the caller passes the time): the
workflow's handlers ask ``problem`` before accepting anything, so the ``decide`` update's
validator and the signals apply exactly the same rules.
"""

from __future__ import annotations

from datetime import datetime

from toolcalls.workflows.models.approval import (
    ApprovalRecord,
    ApprovalRequest,
    ApprovalRule,
    DecisionInput,
)

ANYONE = ApprovalRule()
"""The rule of a call the deployment's ``[approvers]`` says nothing about."""


def allowed_names(rule: ApprovalRule | None, *, escalated: bool = False) -> set[str] | None:
    """The names ``rule`` lets decide; ``None``: anyone."""
    if rule is None or rule.approvers is None:
        return None
    names = set(rule.approvers)
    if escalated:
        names.update(rule.escalate_to)
    return names


class Approvals:
    """One pending request, the decisions recorded for it, and the rule they answer to."""

    def __init__(self, request: ApprovalRequest, rule: ApprovalRule | None) -> None:
        self.request = request
        self.rule = rule or ANYONE
        self.records: list[ApprovalRecord] = []
        """Approvals of the current digest, one per approver."""
        self.denial: ApprovalRecord | None = None
        self.escalated = False

    @property
    def allowed(self) -> set[str] | None:
        """The names that may decide now; ``None``: anyone."""
        return allowed_names(self.rule, escalated=self.escalated)

    @property
    def approved(self) -> bool:
        return self.denial is None and len(self.records) >= self.rule.min_approvals

    @property
    def decided(self) -> bool:
        """Denied, or approved by as many distinct approvers as the rule asks."""
        return self.denial is not None or self.approved

    @property
    def final(self) -> ApprovalRecord | None:
        """The decision that settled the wait: the denial, or the last approval needed."""
        if self.denial is not None:
            return self.denial
        return self.records[-1] if self.approved else None

    def problem(self, decision: DecisionInput, approved: bool, now: datetime) -> str | None:
        """Why ``decision`` cannot be accepted now, or ``None``."""
        pending = self.request
        if decision.request_id != pending.request_id:
            return f"unknown or stale request id {decision.request_id!r}"
        if decision.digest != pending.digest:
            return "digest does not match the pending request"
        if self.decided:
            return "the request was already decided"
        if pending.expires_at is not None and now >= pending.expires_at:
            return "the approval request has expired"
        allowed = self.allowed
        if allowed is not None and decision.approver not in allowed:
            who = repr(decision.approver) if decision.approver else "an unnamed approver"
            may = ", ".join(self.shown) or "nobody"
            return f"{who} may not decide this call; it needs {may}"
        if any(record.approver == decision.approver for record in self.records):
            return f"{decision.approver!r} already approved this call"
        if not approved and (decision.arguments is not None or decision.remember is not None):
            what = "an answer in place of the tool" if decision.response else "a denial"
            return f"{what} cannot edit the arguments or create a grant"
        if decision.response is not None:
            if approved:
                return "an answer in place of the tool goes with a denial (approved=false)"
            if not self.rule.respond:
                return "this deployment does not allow answering a call in place of the tool"
        if decision.remember is not None:
            limit = self.rule.max_grant
            if limit is None:
                return "this deployment does not allow decisions to be remembered"
            if decision.remember.duration > limit:
                return f"a grant may last at most {limit}, not {decision.remember.duration}"
            if self.rule.min_approvals > 1:
                return "a call that needs several approvers cannot be remembered"
        return None

    @property
    def shown(self) -> list[str]:
        """Who may decide, as the configuration names them."""
        if self.rule.approvers is None:
            return []
        return [*self.rule.shown, *(self.rule.escalate_shown if self.escalated else [])]

    def accept(
        self, decision: DecisionInput, approved: bool, via: str, now: datetime
    ) -> ApprovalRecord:
        """Record ``decision`` (``problem`` said nothing against it)."""
        record = ApprovalRecord(
            request_id=decision.request_id,
            digest=decision.digest,
            approved=approved,
            approver=decision.approver,
            reason=decision.reason,
            decided_at=now,
            via=via,
            response=decision.response,
        )
        if approved:
            self.records.append(record)
        else:
            self.denial = record
        return record

    def published(self) -> ApprovalRequest:
        """The pending request as the memo and the ``status`` query show it now."""
        rule = self.rule
        allowed = self.allowed
        return self.request.model_copy(
            update={
                "approvers": sorted(allowed) if allowed is not None else None,
                "approvers_shown": self.shown,
                "min_approvals": rule.min_approvals,
                "approved_by": [record.approver for record in self.records],
                "escalated": self.escalated,
                "max_grant": rule.max_grant,
                "respond": rule.respond,
            }
        )
