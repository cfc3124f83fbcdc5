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

    async def __aenter__(self) -> Heartbeat:
        timeout = activity.info().heartbeat_timeout
        interval = (timeout / 3 if timeout else _DEFAULT_INTERVAL).total_seconds()
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
