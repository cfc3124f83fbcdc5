"""A stand-in for the deployment's ``plan`` activity that answers a parent's plans last first.

Registered under the real activity name on the deployment's queue (whose real worker then polls
no activities), it plans with the real catalog, but holds each answer until every plan of the
batch has been asked for and then answers them in reverse order of the requests, each only once
the parent has taken in the one before (its history has the completion and a workflow task
after it). It makes the worst order of plan results happen every time instead of now and then.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.tools import ALL_FAMILIES
from toolcalls.worker.config import Config, build_catalog
from toolcalls.workflows.models.call import PLAN_ACTIVITY, PlanInput, PlanOutcome

COMPLETED = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
TASK_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED


class ReversedPlans:
    """Plans of ``batch`` requests per parent, answered last request first."""

    def __init__(
        self, client: Client, config: Config, batch: int, order: Callable[[PlanInput], str]
    ):
        self.client = client
        self.batch = batch
        self.order = order
        """Sorts a parent's plan requests into the order they were made in (a token, say)."""
        self._catalog = build_catalog(config, ALL_FAMILIES)
        self._ceiling = config.ceiling_policy()
        self._waiting: dict[str, list[tuple[PlanInput, asyncio.Event]]] = {}
        self._answering: list[asyncio.Task[None]] = []
        self.answered: list[str] = []
        """The keys of the plans answered, in the order they were answered."""

    @activity.defn(name=PLAN_ACTIVITY)
    async def plan(self, input: PlanInput) -> PlanOutcome:
        parent = activity.info().workflow_id or ""
        release = asyncio.Event()
        waiting = self._waiting.setdefault(parent, [])
        waiting.append((input, release))
        if len(waiting) == self.batch:
            self._answering.append(asyncio.create_task(self._answer_in_reverse(parent, waiting)))
        await release.wait()
        return self._catalog.plan(input, self._ceiling, frozenset())

    async def _answer_in_reverse(
        self, parent: str, waiting: list[tuple[PlanInput, asyncio.Event]]
    ) -> None:
        ordered = sorted(waiting, key=lambda item: self.order(item[0]))
        for taken, (input, release) in enumerate(reversed(ordered), 1):
            self.answered.append(self.order(input))
            release.set()
            await self._taken_in(parent, taken)

    async def _taken_in(self, parent: str, count: int) -> None:
        """Wait until the parent's history has ``count`` completed plans and a task after them."""
        handle = self.client.get_workflow_handle(parent)
        while True:
            events = [event.event_type for event in (await handle.fetch_history()).events]
            completed = [i for i, kind in enumerate(events) if kind == COMPLETED]
            if len(completed) >= count and TASK_COMPLETED in events[completed[count - 1] :]:
                return
            await asyncio.sleep(0.05)
