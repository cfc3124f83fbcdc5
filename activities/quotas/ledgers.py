"""The ``toolcalls.quota.reserve`` and ``toolcalls.quota.release`` activities: a call's units
reserved on (and given back to) its quotas' ledger workflows.

A reservation is an update-with-start on the ledger (the first call of a key starts it, on this
worker's task queue); the ledger answers each holder once, so a retried activity never reserves
twice. A call charged to several quotas reserves them in order and, refused by one, gives back
what it already holds before it answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.models.quota import (
    LEDGER_WORKFLOW,
    RELEASE_ACTIVITY,
    RELEASE_UPDATE,
    RESERVE_ACTIVITY,
    RESERVE_UPDATE,
    LedgerState,
    QuotaCharge,
    QuotaDenial,
    ReleaseInput,
    Reservation,
    Reserved,
    ReserveInput,
)


class QuotaLedgers:
    """Reserves and releases on the ledgers, with ``client`` (the worker's)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def reserve(self, input: ReserveInput) -> QuotaDenial:
        queue = activity.info().task_queue
        held: list[str] = []
        for charge in input.charges:
            answer = await self._reserve_one(charge, input.holder, queue)
            if not answer.granted:
                await self.release(ReleaseInput(holder=input.holder, ledgers=held))
                return QuotaDenial(
                    quota=charge.quota,
                    used=answer.used,
                    limit=charge.limit,
                    window=charge.window,
                    retry_at=answer.retry_at,
                )
            held.append(charge.ledger)
        return QuotaDenial()

    async def _reserve_one(self, charge: QuotaCharge, holder: str, queue: str) -> Reserved:
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            LEDGER_WORKFLOW,
            LedgerState(),
            id=charge.ledger,
            task_queue=queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        reservation = Reservation(
            holder=holder, units=charge.units, limit=charge.limit, window=charge.window
        )
        answer: Reserved = await self.client.execute_update_with_start_workflow(
            RESERVE_UPDATE, reservation, start_workflow_operation=start, result_type=Reserved
        )
        return answer

    async def release(self, input: ReleaseInput) -> int:
        """Give ``holder``'s reservations back; how many the ledgers still held. A ledger that
        no longer runs holds nothing (it completes only once its reservations have expired)."""
        released = 0
        for ledger in input.ledgers:
            handle = self.client.get_workflow_handle(ledger)
            try:
                if await handle.execute_update(RELEASE_UPDATE, input.holder, result_type=bool):
                    released += 1
            except RPCError as error:
                if error.status is not RPCStatusCode.NOT_FOUND:
                    raise
        return released

    def activities(self) -> list[Callable[..., Any]]:
        @activity.defn(name=RESERVE_ACTIVITY)
        async def reserve(input: ReserveInput) -> QuotaDenial:
            return await self.reserve(input)

        @activity.defn(name=RELEASE_ACTIVITY)
        async def release(input: ReleaseInput) -> int:
            return await self.release(input)

        return [reserve, release]
