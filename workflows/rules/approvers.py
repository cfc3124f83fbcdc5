"""Who may decide a call: the deployment's ``[approvers]`` rules, resolved at plan time.

Pure: no temporalio, no clock, no I/O. A rule is keyed like a policy rule (a capability, a
``family.*`` prefix) or by a tool's name; every rule that matches a call applies, so an approver
must be allowed by all of them (the names they allow intersect), and the strictest count, the
shortest reminder interval and the earliest escalation win. Groups are expanded to names when the
call is planned: the plan is recorded, so a call keeps the approvers it was planned with.

A name here is written as the workflow compares it, canonically
(``toolcalls.workflows.rules.identities``): ``Alice`` or ``alice `` is refused with the spelling to
use, so the names an operator reads are the names decisions are matched against.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import timedelta

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from toolcalls.workflows.models.approval import ApprovalRule
from toolcalls.workflows.rules import policy
from toolcalls.workflows.rules.identities import canonical_name

MAX_APPROVALS = 10
MAX_NAMES = 1_000


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Names = list[str]


class ApproverRule(_Section):
    """``[approvers.rules."KEY"]``: who may decide calls the key matches, and how."""

    approvers: Names | None = None
    """Names or groups; absent, anyone may decide (the rule then only sets the other keys)."""
    min_approvals: int = Field(default=1, ge=1, le=MAX_APPROVALS)
    """Distinct approvers needed; one denial ends the call whatever the count."""
    remind_every_seconds: float | None = Field(default=None, gt=0)
    escalate_after_seconds: float | None = Field(default=None, gt=0)
    escalate_to: Names = Field(default_factory=list)
    """Names or groups who may also decide once ``escalate_after_seconds`` passed undecided."""
    respond: bool = True
    """Whether an approver may answer these calls in place of the tool; false in any matching
    rule forbids it."""

    @model_validator(mode="after")
    def _escalation(self) -> ApproverRule:
        if (self.escalate_after_seconds is None) != (not self.escalate_to):
            raise ValueError("escalate_after_seconds and escalate_to go together")
        return self


class ApproversSettings(_Section):
    """The ``[approvers]`` section: groups, rules, and how long a decision may be remembered."""

    groups: dict[str, Names] = Field(default_factory=dict)
    rules: dict[str, ApproverRule] = Field(default_factory=dict)
    max_grant_seconds: float = Field(default=0, ge=0)
    """Longest standing grant a decision may create; 0 (the default) allows none."""
    respond: bool = True
    """Whether an approver may answer a call in place of the tool (a "respond" decision)."""

    @field_validator("groups")
    @classmethod
    def _groups(cls, groups: dict[str, Names]) -> dict[str, Names]:
        for name, members in groups.items():
            _check_names(f"group {name}", members)
            nested = [m for m in members if m in groups]
            if nested:
                raise ValueError(f"group {name}: groups cannot contain groups ({nested})")
        return groups

    @field_validator("rules")
    @classmethod
    def _rule_keys(
        cls, rules: dict[str, ApproverRule], info: ValidationInfo
    ) -> dict[str, ApproverRule]:
        bad = [key for key in rules if not policy.is_valid_rule(key)]
        if bad:
            raise ValueError(f"invalid rule keys {bad}: use a capability, a family.* or a tool")
        groups = info.data.get("groups") or {}
        for key, rule in rules.items():
            names = [*(rule.approvers or []), *rule.escalate_to]
            _check_names(f"rule {key}", names, groups)
        return rules

    def expand(self, names: Sequence[str]) -> set[str]:
        """``names`` with each group replaced by its members."""
        found: set[str] = set()
        for name in names:
            found.update(self.groups.get(name, [name]))
        return found


def _check_names(where: str, names: Sequence[str], groups: Collection[str] = ()) -> None:
    """Each of ``names`` is a group or a canonical name."""
    for name in names:
        if name not in groups:
            canonical_name(name, where)
    if len(names) > MAX_NAMES:
        raise ValueError(f"{where}: at most {MAX_NAMES} names")


def matching(settings: ApproversSettings, tool: str, capabilities: Sequence[str]) -> list[str]:
    """The keys of the rules that apply to a call: the tool's own rule, and for each capability
    its exact rule or else its longest ``family.*`` rule."""
    keys = [tool] if tool in settings.rules else []
    for capability in capabilities:
        if capability in settings.rules:
            keys.append(capability)
            continue
        prefixes = [
            key for key in settings.rules if key.endswith(".*") and capability.startswith(key[:-1])
        ]
        if prefixes:
            keys.append(max(prefixes, key=len))
    return list(dict.fromkeys(keys))


def resolve(
    settings: ApproversSettings | None, tool: str, capabilities: Sequence[str]
) -> ApprovalRule | None:
    """The approval rule of one call; ``None`` when the deployment says nothing about it
    (anyone may decide, one approval, no reminders, no grants, answers allowed)."""
    if settings is None:
        return None
    keys = matching(settings, tool, capabilities)
    max_grant = (
        timedelta(seconds=settings.max_grant_seconds) if settings.max_grant_seconds else None
    )
    if not keys and max_grant is None and settings.respond:
        return None
    rules = [settings.rules[key] for key in keys]
    allowed: set[str] | None = None
    shown: list[str] = []
    for rule in rules:
        if rule.approvers is None:
            continue
        names = settings.expand(rule.approvers)
        allowed = names if allowed is None else allowed & names
        shown += [name for name in rule.approvers if name not in shown]
    reminders = [r.remind_every_seconds for r in rules if r.remind_every_seconds]
    escalations = [r for r in rules if r.escalate_after_seconds]
    first = min(escalations, key=lambda r: r.escalate_after_seconds or 0, default=None)
    return ApprovalRule(
        rules=keys,
        approvers=sorted(allowed) if allowed is not None else None,
        shown=shown,
        min_approvals=max((r.min_approvals for r in rules), default=1),
        remind_every=timedelta(seconds=min(reminders)) if reminders else None,
        escalate_after=(
            timedelta(seconds=first.escalate_after_seconds)
            if first and first.escalate_after_seconds
            else None
        ),
        escalate_to=sorted(settings.expand(first.escalate_to)) if first else [],
        escalate_shown=list(first.escalate_to) if first else [],
        max_grant=max_grant,
        respond=settings.respond and all(rule.respond for rule in rules),
    )
