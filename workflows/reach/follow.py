"""Following a call's progress stream to its result (``ToolCallClient.follow``).

While the call runs, the reader pages through what it retains with the ``progress_page`` query
(nothing is written to history by reading); a worker that is gone for a moment (restarted) only
delays the next page. Once the call has ended, the stream is rebuilt from its history's progress
signals, with the same retention bound, so no worker is needed: as far as history is retained, a
finished call can be read again from any offset.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.call.progress import ProgressLog
from toolcalls.workflows.models.call import ToolCallResult
from toolcalls.workflows.models.progress import (
    PROGRESS_QUERY,
    PROGRESS_SIGNAL,
    ProgressBatch,
    ProgressItem,
    ProgressPage,
    ProgressRequest,
)
from toolcalls.workflows.models.views import CallNotFound

POLL_SECONDS = 0.25
"""Pause between two pages when the last one brought nothing new."""
UNREACHABLE_PAUSE = 1.0
"""Pause before asking again when no worker answered (one restarting, say)."""
QUERY_TIMEOUT = timedelta(seconds=5)
"""How long one page may take: a query to a call whose worker is gone waits for another."""
SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED


@dataclass(frozen=True)
class ProgressGap:
    """Items the reader asked for were dropped (the retention bound) before it read them."""

    from_offset: int
    """The offset the reader asked for."""
    missed: int
    """How many items were dropped; the next item has offset ``from_offset + missed``."""


FollowEvent = ProgressItem | ProgressGap | ToolCallResult


async def follow(
    client: Client, workflow_id: str, from_offset: int = 0, *, poll: float = POLL_SECONDS
) -> AsyncIterator[FollowEvent]:
    """The call's progress items from ``from_offset`` on, in order, then its result.

    A ``ProgressGap`` comes first when items before the retained ones were asked for. Raises
    ``CallNotFound`` for an unknown id, and what ``WorkflowHandle.result`` raises for a call that
    ended without a result (terminated).
    """
    handle: WorkflowHandle[object, ToolCallResult] = client.get_workflow_handle(
        workflow_id, result_type=ToolCallResult
    )
    offset = from_offset
    while True:
        try:
            description = await handle.describe()
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                raise CallNotFound(f"no call has id {workflow_id!r}") from None
            raise
        if description.status is not WorkflowExecutionStatus.RUNNING:
            async for event in _from_history(client, handle, offset):
                yield event
            yield await handle.result()
            return
        page = await _page(handle, offset)
        if page is None:
            await asyncio.sleep(UNREACHABLE_PAUSE)
            continue
        while True:
            if page.missed:
                yield ProgressGap(from_offset=offset, missed=page.missed)
            for item in page.items:
                yield item
            offset = page.next_offset
            if page.ended:
                yield await handle.result()
                return
            if not page.items:
                break
            next_page = await _page(handle, offset)
            if next_page is None:
                break
            page = next_page
        await asyncio.sleep(poll)


async def page_of(client: Client, workflow_id: str, offset: int) -> ProgressPage:
    """One page of the call's stream from ``offset``: from its worker while it runs (an empty page,
    not ended, when none answers now), from its history once it has ended."""
    handle: WorkflowHandle[object, ToolCallResult] = client.get_workflow_handle(
        workflow_id, result_type=ToolCallResult
    )
    description = await handle.describe()
    if description.status is WorkflowExecutionStatus.RUNNING:
        return await _page(handle, offset) or ProgressPage(next_offset=offset)
    log = await _history_log(client, handle)
    return log.page(ProgressRequest(from_offset=offset), ended=True)


async def latest_item(client: Client, workflow_id: str) -> ProgressItem | None:
    """The last item the call has published so far, if any (two pages of one item)."""
    end = (await page_of(client, workflow_id, _FAR)).end_offset
    if end == 0:
        return None
    items = (await page_of(client, workflow_id, end - 1)).items
    return items[0] if items else None


_FAR = 2**62
"""An offset past any stream's end: its page is empty and says where the stream ends."""


async def _page(handle: WorkflowHandle[object, ToolCallResult], offset: int) -> ProgressPage | None:
    """The next page, or ``None`` when no worker answered now (or the call ended meanwhile)."""
    try:
        page: ProgressPage = await handle.query(
            PROGRESS_QUERY,
            ProgressRequest(from_offset=offset),
            result_type=ProgressPage,
            rpc_timeout=QUERY_TIMEOUT,
        )
        return page
    except WorkflowQueryFailedError as exc:
        if "unknown queryType" in str(exc) or PROGRESS_QUERY in str(exc):
            # A call started before the stream existed: it has no progress, only a result.
            return ProgressPage(next_offset=offset, ended=True)
        return None
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise
        return None


async def _from_history(
    client: Client, handle: WorkflowHandle[object, ToolCallResult], offset: int
) -> AsyncIterator[ProgressItem | ProgressGap]:
    """The stream of an ended call, rebuilt from its recorded progress signals."""
    log = await _history_log(client, handle)
    while True:
        page = log.page(ProgressRequest(from_offset=offset), ended=True)
        if page.missed:
            yield ProgressGap(from_offset=offset, missed=page.missed)
        for item in page.items:
            yield item
        if page.ended or not page.items:
            return
        offset = page.next_offset


async def _history_log(
    client: Client, handle: WorkflowHandle[object, ToolCallResult]
) -> ProgressLog:
    """What the call kept, rebuilt from the progress signals in its history."""
    log = ProgressLog()
    async for event in handle.fetch_history_events():
        if event.event_type != SIGNALED:
            continue
        attributes = event.workflow_execution_signaled_event_attributes
        if attributes.signal_name != PROGRESS_SIGNAL:
            continue
        try:
            (batch,) = await client.data_converter.decode(
                list(attributes.input.payloads), [ProgressBatch]
            )
        except Exception:  # the workflow ignored a batch that does not parse: so does this
            continue
        log.accept(batch)
    return log
