"""The plan's part of ``[[policies]]``: each set's verdict recorded in the plan, and the approver
groups an enforced verdict names added to the plan's approval rule."""

from __future__ import annotations

from collections.abc import Sequence

from toolcalls.activities.cedar.engine import PolicySet, Subject, evaluate_all
from toolcalls.workflows.models.approval import ApprovalRule
from toolcalls.workflows.models.call import CallPlan, PlanInput, PlanOutcome
from toolcalls.workflows.models.verdict import PolicyMode, PolicyVerdict
from toolcalls.workflows.rules.approvers import ApproversSettings


def judged(
    outcome: PlanOutcome,
    input: PlanInput,
    sets: Sequence[PolicySet],
    approvers: ApproversSettings | None,
) -> PlanOutcome:
    """``outcome`` with the principal and, when the deployment has policy sets, their verdicts
    in its plan."""
    plan = outcome.plan
    if plan is None or (input.principal is None and not sets):
        return outcome
    updates: dict[str, object] = {"principal": input.principal}
    if sets:
        subject = Subject(
            tool=plan.tool,
            capabilities=plan.capabilities,
            arguments=plan.arguments,
            side_effect=plan.side_effect.value,
            principal=input.principal,
            profile=input.profile,
            parent=input.parent,
            policy=input.policy,
        )
        verdicts = evaluate_all(sets, subject)
        updates["policies"] = verdicts
        updates["approval_rule"] = with_groups(plan, verdicts, approvers)
    return outcome.model_copy(update={"plan": plan.model_copy(update=updates)})


def with_groups(
    plan: CallPlan, verdicts: Sequence[PolicyVerdict], approvers: ApproversSettings | None
) -> ApprovalRule | None:
    """The plan's approval rule, narrowed to the members of the groups enforced verdicts name
    (``@approvers("ops")``): an approver must be in every group named, and in the rule's own."""
    groups = [
        g
        for v in verdicts
        if v.mode is PolicyMode.ENFORCE and v.effect != "deny"
        for g in v.approvers
    ]
    rule = plan.approval_rule
    if not groups:
        return rule
    allowed = set(rule.approvers) if rule is not None and rule.approvers is not None else None
    for group in groups:
        members = approvers.expand([group]) if approvers is not None else {group}
        allowed = members if allowed is None else allowed & members
    base = rule or ApprovalRule()
    shown = [*base.shown, *(g for g in groups if g not in base.shown)]
    return base.model_copy(
        update={
            "rules": [*base.rules, *(f"policy:{g}" for g in groups)],
            "approvers": sorted(allowed or ()),
            "shown": shown,
        }
    )
