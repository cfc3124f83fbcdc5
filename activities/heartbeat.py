"""One heartbeat helper for every long-running tool.

Cancellation reaches an activity only through heartbeats, so a tool that runs for more than a
moment keeps a ``Heartbeat`` open: it sends the latest progress on a timer (a third of the
activity's heartbeat timeout) whether or not the tool's own loop is making progress.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from types import TracebackType
from typing import Any

from temporalio import activity

_DEFAULT_INTERVAL = timedelta(seconds=5)
PROMPT_INTERVAL = timedelta(seconds=0.4)
"""How often a ``PromptHeartbeat`` beats: with the worker's heartbeat throttle
(``toolcalls.worker.run.HEARTBEAT_THROTTLE``), a cancellation reaches the tool within a second."""


class Heartbeat:
    """Heartbeats ``details`` periodically while open; ``update`` replaces the details."""

    def __init__(self, **details: Any) -> None:
        self.details: dict[str, Any] = dict(details)
        self._task: asyncio.Task[None] | None = None

    def update(self, **details: Any) -> None:
        """Merge new progress into what the next heartbeat sends."""
        self.details.update(details)

    def beat(self) -> None:
        """Send now (the SDK throttles)."""
        activity.heartbeat(dict(self.details))

    async def _run(self, interval: float) -> None:
        while True:
            self.beat()
            await asyncio.sleep(interval)

    def interval(self) -> timedelta:
        """A third of the activity's heartbeat timeout, so that a late beat still arrives."""
        timeout = activity.info().heartbeat_timeout
        return timeout / 3 if timeout else _DEFAULT_INTERVAL

    async def __aenter__(self) -> Heartbeat:
        interval = self.interval().total_seconds()
        self._task = asyncio.create_task(self._run(interval))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class PromptHeartbeat(Heartbeat):
    """A ``Heartbeat`` that beats every ``PROMPT_INTERVAL`` at most: for a tool that must stop
    within a second when its call is canceled (a command and its process group). Each beat costs
    a request to the server at most every ``HEARTBEAT_THROTTLE``."""

    def interval(self) -> timedelta:
        return min(super().interval(), PROMPT_INTERVAL)
