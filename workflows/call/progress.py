"""``ProgressStream`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``):
the call's progress stream, a signal that appends batches and a query that pages through them.

Neither handler issues a command: a call whose tool publishes nothing has the same history and
the same workflow tasks as before the stream existed, and a call that does publish replays from
its signals. Items live in the workflow's memory only, rebuilt on replay; the latest
``MAX_RETAINED_ITEMS`` are kept. Readers query (nothing is written to history by reading).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from pydantic import ValidationError
from temporalio import workflow

from toolcalls.workflows.models.call import ToolCallResult
from toolcalls.workflows.models.progress import (
    MAX_PAGE_CHARS,
    MAX_RETAINED_ITEMS,
    PROGRESS_QUERY,
    PROGRESS_SIGNAL,
    ProgressBatch,
    ProgressItem,
    ProgressPage,
    ProgressRequest,
)


class ProgressLog:
    """The retained items, their offsets and, per publisher, how much of its output is in.

    Pure: the workflow keeps one, and a reader of a closed call's history rebuilds the same from
    the recorded signals (``toolcalls.workflows.reach.follow``).
    """

    def __init__(self) -> None:
        self.items: deque[ProgressItem] = deque(maxlen=MAX_RETAINED_ITEMS)
        self.next = 0
        """The offset the next accepted item gets: every item ever accepted counts."""
        self.seen: dict[str, int] = {}
        """Per publisher, how many of its entries (by position) the log holds."""

    def accept(self, batch: ProgressBatch) -> int:
        """Append the entries of ``batch`` at positions not held yet; how many."""
        seen = self.seen.get(batch.publisher, 0)
        fresh = batch.entries[max(seen - batch.first, 0) :]
        if not fresh:
            return 0
        self.seen[batch.publisher] = max(seen, batch.first + len(batch.entries))
        for entry in fresh:
            self.items.append(ProgressItem(**entry.model_dump(), offset=self.next))
            self.next += 1
        return len(fresh)

    def page(self, request: ProgressRequest, *, ended: bool) -> ProgressPage:
        """The retained items from ``request.from_offset`` on, a page at most."""
        base = self.next - len(self.items)
        start = max(request.from_offset, base)
        items: list[ProgressItem] = []
        chars = 0
        for index in range(start - base, len(self.items)):
            item = self.items[index]
            chars += len(item.text)
            if items and (len(items) >= request.limit or chars > MAX_PAGE_CHARS):
                break
            items.append(item)
        next_offset = items[-1].offset + 1 if items else max(start, self.next)
        return ProgressPage(
            items=items,
            next_offset=next_offset,
            base_offset=base,
            missed=max(base - request.from_offset, 0),
            end_offset=self.next,
            ended=ended and next_offset >= self.next,
        )


class ProgressStream:
    """The workflow's part: the log, fed by a signal and read by a query."""

    _result: ToolCallResult | None

    def _init_progress(self) -> None:
        self._progress = ProgressLog()

    @workflow.signal(name=PROGRESS_SIGNAL)
    def progress(self, payload: Any) -> None:
        """A batch of progress from the running tool; positions already held are skipped."""
        try:
            batch = ProgressBatch.model_validate(payload)
        except ValidationError:
            workflow.logger.warning("a progress batch that does not parse was ignored")
            return
        if self._result is None:  # once the call has its result, the stream is closed
            self._progress.accept(batch)

    @workflow.query(name=PROGRESS_QUERY)
    def progress_page(self, request: ProgressRequest) -> ProgressPage:
        """The retained items from ``request.from_offset`` on, a page at most."""
        return self._progress.page(request, ended=self._result is not None)
