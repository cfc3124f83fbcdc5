"""``toolcalls policy test CASES.toml``: the deployment's policies against example requests.

Each ``[[cases]]`` entry names a request (``tool``, ``arguments``, an optional ``principal``,
``profile`` and ``policy``) and the decision it should get (``expect``: ``allow``,
``require_approval`` or ``deny``). Every case is planned as the worker plans a call, from the
configuration alone (no server): the catalog validates the arguments, the ceiling, the request's
policy and the ``[[policies]]`` sets decide. Each case prints its expected and actual decision;
any mismatch (or a case that cannot be planned) exits 1, a malformed file 2.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolcalls.activities.cedar.judge import judged
from toolcalls.worker.config import Config, build_catalog, policy_sets
from toolcalls.worker.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from toolcalls.workflows.models.call import CapabilityPolicy, PlanInput
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.rules import policy

MAX_CASES = 10_000


class Case(BaseModel):
    """One example request and the decision it should get."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    principal: Principal | None = None
    profile: str | None = None
    policy: CapabilityPolicy | None = None
    parent: str | None = None
    expect: Literal["allow", "require_approval", "deny"]


class Cases(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cases: list[Case] = Field(min_length=1, max_length=MAX_CASES)


def read_cases(path: Path) -> list[Case]:
    """The file's cases; a usage error naming the problem otherwise."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(EXIT_USAGE, f"policy test: {path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CommandError(EXIT_USAGE, f"policy test: {path}: not valid TOML: {exc}") from None
    try:
        return Cases.model_validate(data).cases
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CommandError(EXIT_USAGE, f"policy test: {path}: {where}: {first['msg']}") from None


def decide_case(config: Config, case: Case, runtime: Any = None) -> tuple[str, str]:
    """The decision a case's request gets and why (or ``error`` and the plan's refusal)."""
    catalog, sets = runtime or (build_catalog(config), policy_sets(config))
    request = PlanInput(
        tool=case.tool,
        arguments=case.arguments,
        profile=case.profile,
        policy=case.policy,
        principal=case.principal,
        parent=case.parent,
    )
    outcome, _ = catalog.plan_call(
        request, config.ceiling_policy(), frozenset(), config.approvers, ()
    )
    outcome = judged(outcome, request, sets, config.approvers)
    if outcome.plan is None:
        message = outcome.error.message if outcome.error else "no plan"
        return "error", message
    decision = policy.decide_plan(outcome.plan, case.policy)
    reasons = decision.reasons() or [v.reason() for v in outcome.plan.policies]
    return decision.effect.value, "; ".join(reasons)


def run_cases(config: Config, path: Path) -> int:
    """Run every case of ``path`` and print expected against actual; exit 1 on a mismatch."""
    cases = read_cases(path)
    runtime = (build_catalog(config), policy_sets(config))
    failed = 0
    for number, case in enumerate(cases, 1):
        actual, why = decide_case(config, case, runtime)
        ok = actual == case.expect
        failed += not ok
        name = case.name or f"case {number}"
        who = case.principal.id if case.principal else "no principal"
        print(
            f"{'ok  ' if ok else 'FAIL'} {name}: {case.tool} for {who}: "
            f"expected {case.expect}, got {actual}" + (f" ({why})" if why else "")
        )
    print(f"{len(cases) - failed} of {len(cases)} cases pass")
    return EXIT_FAILED if failed else EXIT_OK
