"""Capability policy: pure functions, no clock, no I/O, no Temporal.

A policy gives each capability an effect: an exact rule (``filesystem.write``) beats a prefix rule
(``filesystem.*``, longest prefix first), which beats ``default_effect``. A ``tools`` entry adds an
effect for the tool as a whole. A call's effect is the strictest verdict over its capabilities and
tool entry, from both the deployment's ceiling and the request's policy
(``deny > require_approval > allow``): a request can tighten the deployment, never loosen it.

A tool with no capabilities (``calculator``) is governed only by ``tools`` entries, so a
``default_effect="deny"`` written for capability-bearing tools does not switch off arithmetic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from toolcalls.workflows.models.call import CallPlan, CapabilityPolicy, Effect, Verdict
from toolcalls.workflows.models.verdict import PolicyMode, PolicyVerdict

_RANK = {Effect.ALLOW: 0, Effect.REQUIRE_APPROVAL: 1, Effect.DENY: 2}

# Capability names are lowercase ASCII, and matching is exact: a key outside this alphabet
# (``Filesystem.Write``) could never match anything, so it is refused rather than ignored.
_RULE_KEY = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?")

DEPLOYMENT = "deployment"
REQUEST = "request"
POLICIES = "policies"


def strictest(effects: Iterable[Effect]) -> Effect:
    """The strictest of ``effects``; ``allow`` for none."""
    return max(effects, key=_RANK.__getitem__, default=Effect.ALLOW)


def is_valid_rule(key: str) -> bool:
    """A rule key is a dotted capability name or a ``family.*`` prefix rule."""
    return _RULE_KEY.fullmatch(key) is not None


def match(policy: CapabilityPolicy, capability: str) -> tuple[Effect, str]:
    """The effect ``policy`` gives ``capability`` and the rule key that decided it."""
    exact = policy.rules.get(capability)
    if exact is not None:
        return exact, capability
    best: str | None = None
    for key in policy.rules:
        prefix_match = key.endswith(".*") and capability.startswith(key[:-1])
        if prefix_match and (best is None or len(key) > len(best)):
            best = key
    if best is not None:
        return policy.rules[best], best
    return policy.default_effect, "default"


def evaluate(
    policy: CapabilityPolicy, tool: str, capabilities: Sequence[str], source: str
) -> list[Verdict]:
    """One verdict per capability, plus one for the tool when ``policy.tools`` names it."""
    verdicts = []
    for capability in capabilities:
        effect, rule = match(policy, capability)
        verdicts.append(Verdict(subject=capability, effect=effect, rule=rule, source=source))
    tool_effect = policy.tools.get(tool)
    if tool_effect is not None:
        subject = f"tool:{tool}"
        verdicts.append(Verdict(subject=subject, effect=tool_effect, rule=subject, source=source))
    return verdicts


@dataclass(frozen=True)
class Decision:
    """The combined effect for a call and the verdicts that made it so."""

    effect: Effect
    deciding: tuple[Verdict, ...]

    def reasons(self) -> list[str]:
        """Readable reasons, e.g. ``git.write: require_approval (deployment rule default)``."""
        return [f"{v.subject}: {v.effect.value} ({v.source} rule {v.rule})" for v in self.deciding]


def decide(
    ceiling: Sequence[Verdict],
    request_policy: CapabilityPolicy | None,
    tool: str,
    capabilities: Sequence[str],
    policies: Sequence[PolicyVerdict] = (),
) -> Decision:
    """Combine the deployment's ceiling verdicts with the request's policy and the enforced
    ``[[policies]]`` sets' verdicts; strictest wins. Shadow sets' verdicts are left out."""
    verdicts = list(ceiling)
    if request_policy is not None:
        verdicts += evaluate(request_policy, tool, capabilities, REQUEST)
    verdicts += [as_verdict(v) for v in policies if v.mode is PolicyMode.ENFORCE]
    effect = strictest(v.effect for v in verdicts)
    deciding = tuple(v for v in verdicts if v.effect == effect != Effect.ALLOW)
    return Decision(effect=effect, deciding=deciding)


def as_verdict(verdict: PolicyVerdict) -> Verdict:
    """A policy set's verdict as one more verdict on the call: its rule names the deciding
    policy ids (or the evaluation error, or that no policy permits the call)."""
    if verdict.errors:
        rule = "evaluation error"
    elif verdict.policies:
        rule = ", ".join(verdict.policies)
    else:
        rule = "no permit"
    return Verdict(
        subject=f"{POLICIES}:{verdict.name}",
        effect=Effect(verdict.effect),
        rule=rule,
        source=POLICIES,
    )


def decide_plan(plan: CallPlan, request_policy: CapabilityPolicy | None) -> Decision:
    """``decide`` for a plan: its ceiling, the request's policy and its policy sets' verdicts."""
    return decide(plan.ceiling, request_policy, plan.tool, plan.capabilities, plan.policies)


def shadow(plan: CallPlan, request_policy: CapabilityPolicy | None) -> list[tuple[str, Effect]]:
    """Each shadow set's effect, had it been enforced, beside the effective decision."""
    found = []
    for verdict in plan.policies:
        if verdict.mode is PolicyMode.SHADOW:
            enforced = verdict.model_copy(update={"mode": PolicyMode.ENFORCE})
            effect = decide(
                plan.ceiling, request_policy, plan.tool, plan.capabilities, [enforced]
            ).effect
            found.append((verdict.name, effect))
    return found
