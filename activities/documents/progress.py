"""The worker's side of the parser's page reports (``pages``): read from the job's socket while
the parser runs, and passed to the heartbeat and the call's progress stream.

The reports come from the process that parses hostile files: each is read into a fixed number of
bytes, one every ``pages.READ_INTERVAL`` seconds at most, and only a well-formed count whose
``done`` grows gets through; nothing the parser sends here can fail the tool or reach its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

from toolcalls.activities.documents.pages import (
    MAX_MESSAGE_BYTES,
    READ_INTERVAL,
    PageCount,
    page_count,
)
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.progress import ProgressPublisher
from toolcalls.workflows.models.progress import ProgressKind


async def read_pages(
    channel: socket.socket, report: PageCount, *, pause: float = READ_INTERVAL
) -> None:
    """Each well-formed, growing count on ``channel`` (a non-blocking socket) to ``report``,
    until the parser's end of it closes; it never raises for what the parser sends."""
    loop = asyncio.get_running_loop()
    last = -1
    while True:
        try:
            message = await loop.sock_recv(channel, MAX_MESSAGE_BYTES + 1)
        except (OSError, ValueError):  # the socket is closed (a job that was never handed over)
            return
        if not message:  # the parser closed its end (or sent an empty message: the same to us)
            return
        count = page_count(message)
        if count is not None and count[0] > last:
            last = count[0]
            report(*count)
        await asyncio.sleep(pause)


@contextlib.asynccontextmanager
async def reading_pages(channel: socket.socket, report: PageCount) -> AsyncIterator[None]:
    """``read_pages`` in the background for the block."""
    task = asyncio.ensure_future(read_pages(channel, report))
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def pages_done(beat: Heartbeat, publisher: ProgressPublisher | None) -> PageCount:
    """Where the parser's page counts go: the heartbeat and (as a ``pages`` count) the call's
    progress stream."""

    def update(done: int, total: int) -> None:
        beat.update(pages=done, total_pages=total)
        if publisher is not None:
            publisher.add(ProgressKind.PAGES, done=done, total=total)

    return update
