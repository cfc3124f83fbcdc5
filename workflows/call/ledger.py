"""``ToolCallQuotaLedger``: one quota key's reservations (``toolcalls.workflows.models.quota``).

Its ``reserve`` and ``release`` updates are synchronous handlers, so they run one at a time in
history order: two calls racing for the last unit cannot both get it. A reservation counts until
its window has passed since it was made. The run continues as new (carrying what it holds) after
``continue_after`` updates or when Temporal suggests it, and completes once it holds nothing
(the next call's update-with-start begins a new run).
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

from temporalio import workflow

from toolcalls.workflows.models.quota import (
    LEDGER_WORKFLOW,
    RELEASE_UPDATE,
    RESERVE_UPDATE,
    Held,
    LedgerState,
    Reservation,
    Reserved,
)

IDLE = timedelta(minutes=1)
"""How long a ledger that holds nothing waits for a reservation before it completes."""


@workflow.defn(name=LEDGER_WORKFLOW)
class QuotaLedgerWorkflow:
    """Serialises one key's reservations against its limit over a sliding window."""

    @workflow.init
    def __init__(self, state: LedgerState) -> None:
        self._held = {held.holder: held for held in state.held}
        self._continue_after = state.continue_after
        self._handled = 0

    @workflow.run
    async def run(self, state: LedgerState) -> None:
        while True:
            self._prune(workflow.now())
            wait = self._next_expiry() - workflow.now() if self._held else IDLE
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(
                    self._should_continue, timeout=max(wait, timedelta(seconds=1))
                )
            if self._should_continue():
                await workflow.wait_condition(workflow.all_handlers_finished)
                self._prune(workflow.now())
                workflow.continue_as_new(
                    LedgerState(held=list(self._held.values()), continue_after=self._continue_after)
                )
            self._prune(workflow.now())
            if not self._held and workflow.all_handlers_finished():
                return

    def _should_continue(self) -> bool:
        return (
            self._handled >= self._continue_after or workflow.info().is_continue_as_new_suggested()
        )

    def _prune(self, now: datetime) -> None:
        for holder in [h.holder for h in self._held.values() if h.until <= now]:
            del self._held[holder]

    def _next_expiry(self) -> datetime:
        return min(held.until for held in self._held.values())

    @workflow.update(name=RESERVE_UPDATE)
    def reserve(self, reservation: Reservation) -> Reserved:
        """Hold ``units`` for the caller if the window has room; the same holder again gets
        the answer it got (a retried activity reserves once)."""
        self._handled += 1
        now = workflow.now()
        self._prune(now)
        used = sum(held.units for held in self._held.values())
        if reservation.holder in self._held:
            return Reserved(granted=True, used=used)
        if used + reservation.units <= reservation.limit:
            until = now + reservation.window
            self._held[reservation.holder] = Held(
                holder=reservation.holder, units=reservation.units, until=until
            )
            return Reserved(granted=True, used=used + reservation.units)
        return Reserved(granted=False, used=used, retry_at=self._room_at(reservation, used))

    @reserve.validator
    def _check(self, reservation: Reservation) -> None:
        if reservation.window <= timedelta(0):
            raise ValueError("a reservation's window must be positive")

    def _room_at(self, reservation: Reservation, used: int) -> datetime | None:
        """When enough held units expire for ``reservation`` to fit."""
        if reservation.units > reservation.limit:
            return None
        for held in sorted(self._held.values(), key=lambda h: h.until):
            used -= held.units
            if used + reservation.units <= reservation.limit:
                return held.until
        return None

    @workflow.update(name=RELEASE_UPDATE)
    def release(self, holder: str) -> bool:
        """Give back ``holder``'s reservation (its call never executed); ``False``: none held."""
        self._handled += 1
        return self._held.pop(holder, None) is not None

    @workflow.query
    def held(self) -> list[Held]:
        return list(self._held.values())
