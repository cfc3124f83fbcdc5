"""``[[quotas]]`` settings and the charges of a planned call (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.workflows.models.call import CallPlan, PlanOutcome
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.quota import NO_PRINCIPAL, QuotaCharge

MAX_QUOTAS = 64
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class QuotaSettings(BaseModel):
    """One quota: at most ``limit`` units in any ``window``, per principal (and per tool with
    ``per_tool``), charged by the calls of ``tools`` or of tools that need one of
    ``capabilities`` (with neither, every call); a call costs ``costs[tool]`` units, else 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    limit: int = Field(ge=1, le=1_000_000)
    window: timedelta
    """``90s``, ``30m``, ``8h``, ``1d``, or seconds."""
    tools: list[str] = Field(default_factory=list, max_length=256)
    capabilities: list[str] = Field(default_factory=list, max_length=256)
    """Capability names, or prefixes such as ``email.*``."""
    per_tool: bool = False
    costs: dict[str, int] = Field(default_factory=dict)

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip().lower()
            unit = _UNITS.get(text[-1:], 0)
            try:
                seconds = float(text[:-1] if unit else text) * (unit or 1)
            except ValueError:
                raise ValueError(
                    f"{value!r} is not a duration such as 90s, 30m, 8h or 1d"
                ) from None
            return timedelta(seconds=seconds)
        return value

    @field_validator("window")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0) or value > timedelta(days=366):
            raise ValueError("a quota's window is more than 0 seconds and at most 366 days")
        return value

    @field_validator("costs")
    @classmethod
    def _costs(cls, costs: dict[str, int]) -> dict[str, int]:
        for tool, units in costs.items():
            if not 0 <= units <= 1_000_000:
                raise ValueError(f"costs.{tool}: a cost is 0 to 1000000 units")
        return costs

    def applies(self, tool: str, capabilities: Sequence[str]) -> bool:
        if not self.tools and not self.capabilities:
            return True
        if tool in self.tools:
            return True
        return any(_matches(rule, have) for rule in self.capabilities for have in capabilities)

    def ledger(self, principal: Principal | None, tool: str) -> str:
        who = principal.id if principal is not None else NO_PRINCIPAL
        key = f"toolcalls-quota:{self.name}:{who}"
        return f"{key}:{tool}" if self.per_tool else key


def _matches(rule: str, capability: str) -> bool:
    if rule.endswith(".*"):
        return capability.startswith(rule[:-1])
    return rule == capability


def charges(
    quotas: Sequence[QuotaSettings], plan: CallPlan, principal: Principal | None
) -> list[QuotaCharge]:
    """The quotas ``plan`` is charged to (a quota whose cost for the tool is 0 is not)."""
    found = []
    for quota in quotas:
        units = quota.costs.get(plan.tool, 1)
        if units and quota.applies(plan.tool, plan.capabilities):
            found.append(
                QuotaCharge(
                    quota=quota.name,
                    ledger=quota.ledger(principal, plan.tool),
                    units=units,
                    limit=quota.limit,
                    window=quota.window,
                )
            )
    return found


def charged(
    outcome: PlanOutcome, principal: Principal | None, quotas: Sequence[QuotaSettings]
) -> PlanOutcome:
    """``outcome`` with its plan's quota charges (a tool the workflow runs itself is never
    charged: ``ask_user`` executes nothing)."""
    plan = outcome.plan
    if plan is None or plan.activity is None or not quotas:
        return outcome
    found = charges(quotas, plan, principal)
    if not found:
        return outcome
    return outcome.model_copy(update={"plan": plan.model_copy(update={"quotas": found})})
