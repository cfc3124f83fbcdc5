"""Wire models and names of ``[[quotas]]``: limits on the calls that may *execute*, held across
every call, parent and worker by a ledger workflow per key (``toolcalls.workflows.call.ledger``).

The plan names the quotas a call is charged to (``QuotaCharge``, recorded with the plan, so a
changed quota affects only new calls). Before any approval is asked, ``ToolCallWorkflow`` asks
the ``toolcalls.quota.reserve`` activity to reserve the call's units on each quota's ledger
(update-with-start: the first call of a key starts its ledger). The ledger serialises
reservations through its ``reserve`` update, so racing calls never overspend; a reservation is
keyed by the call's workflow run, so a retried activity never reserves twice. A call that never
executes (its approval denied, timed out, or the call canceled before its tool ran) returns its
reservation through ``toolcalls.quota.release``; one that executed keeps it until its window
passes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

LEDGER_WORKFLOW = "ToolCallQuotaLedger"
RESERVE_ACTIVITY = "toolcalls.quota.reserve"
RELEASE_ACTIVITY = "toolcalls.quota.release"
RESERVE_UPDATE = "reserve"
RELEASE_UPDATE = "release"
CONTINUE_AFTER = 500
"""Updates a ledger run handles before it continues as new (sooner if Temporal suggests it)."""
NO_PRINCIPAL = "-"
"""The ledger key of calls that name no principal: they share one ledger per quota."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QuotaCharge(_Model):
    """One quota a planned call is charged to."""

    quota: str
    ledger: str
    """The ledger's workflow id: the quota, the principal and (``per_tool``) the tool."""
    units: int = Field(ge=1)
    limit: int = Field(ge=1)
    window: timedelta


class Reservation(_Model):
    """What ``reserve`` is asked: ``units`` for the call ``holder`` (its workflow run)."""

    holder: str = Field(min_length=1, max_length=1100)
    units: int = Field(ge=1)
    limit: int = Field(ge=1)
    window: timedelta


class Held(_Model):
    """A reservation the ledger counts until ``until``."""

    holder: str
    units: int
    until: datetime


class Reserved(_Model):
    """The ledger's answer: granted, or when enough units free up (``None``: never, the call
    alone costs more than the quota's limit)."""

    granted: bool
    used: int
    """Units held in the window, this reservation included when granted."""
    retry_at: datetime | None = None


class LedgerState(_Model):
    """What a ledger run starts with: the reservations its previous run held."""

    held: list[Held] = Field(default_factory=list)
    continue_after: int = Field(default=CONTINUE_AFTER, ge=1)


class ReserveInput(_Model):
    """The reserve activity's input: one call's charges and the call that holds them."""

    holder: str
    charges: list[QuotaCharge]


class QuotaDenial(_Model):
    """The reserve activity's answer: ``None`` fields when every charge was reserved."""

    quota: str | None = None
    used: int = 0
    limit: int = 0
    window: timedelta | None = None
    retry_at: datetime | None = None

    @property
    def denied(self) -> bool:
        return self.quota is not None


class ReleaseInput(_Model):
    holder: str
    ledgers: list[str]
