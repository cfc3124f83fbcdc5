"""Pages done, from the parser process to the worker, over the socket its job came by.

The parser (``extract``) keeps the ``SOCK_SEQPACKET`` socket its job arrived on and, while it
reads a PDF, sends one message ``{"done": N, "total": M}`` at most every ``REPORT_INTERVAL``
seconds (``PageReporter``), never waiting for the worker: a message the socket has no room for
is dropped. A document read within the first interval sends nothing.

The worker (``tools``) reads these messages as the untrusted input they are (``read_pages``): a
message is read into ``MAX_MESSAGE_BYTES + 1`` bytes and one longer than ``MAX_MESSAGE_BYTES`` is
ignored, as is one that is not a JSON object of two whole numbers with
``0 <= done <= total <= MAX_PAGES``, or whose ``done`` does not grow. It reads one message every
``READ_INTERVAL`` seconds at most, so a parser that floods the socket costs the worker nothing
more. A report reaches the heartbeat and the call's progress stream, never the result.

Loaded by its path in the parser process, like ``extraction``: it imports nothing from the
project.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Callable

REPORT_INTERVAL = 0.2
"""Seconds between two reports of the parser: 10,000 pages are never 10,000 messages."""
READ_INTERVAL = 0.1
"""Seconds the worker waits after reading a message before it reads the next."""
MAX_MESSAGE_BYTES = 64
"""``{"done": 9999999, "total": 9999999}`` with room; anything longer is not a report."""
MAX_PAGES = 10_000_000
"""More pages than any document the size limits let through."""

PageCount = Callable[[int, int], None]
"""Told ``done`` and ``total`` pages as the parser reads."""


def no_pages(done: int, total: int) -> None:
    """Where page counts go when nobody listens."""


class PageReporter:
    """The parser's side: ``reporter(done, total)`` after each page, sent at most every
    ``interval`` seconds (counted from its creation) on ``channel``, without ever blocking."""

    def __init__(self, channel: socket.socket | None, interval: float = REPORT_INTERVAL) -> None:
        self.channel = channel
        self.interval = interval
        self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self.channel is None or now - self.last < self.interval:
            return
        self.last = now
        message = json.dumps({"done": done, "total": total}).encode()
        # The worker not reading, or gone: a report is worth no wait.
        with contextlib.suppress(OSError):
            self.channel.send(message, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)


def page_count(message: bytes) -> tuple[int, int] | None:
    """``(done, total)`` of a well-formed report; ``None`` for anything else."""
    if len(message) > MAX_MESSAGE_BYTES:
        return None
    try:
        fields = json.loads(message)
    except (ValueError, RecursionError):  # not JSON, or not UTF-8 (UnicodeDecodeError)
        return None
    if not isinstance(fields, dict) or set(fields) != {"done", "total"}:
        return None
    done, total = fields["done"], fields["total"]
    if type(done) is not int or type(total) is not int:  # bool is an int, and not a count
        return None
    if not 0 <= done <= total <= MAX_PAGES:
        return None
    return done, total


async def read_pages(
    channel: socket.socket, report: PageCount, *, pause: float = READ_INTERVAL
) -> None:
    """The worker's side: each well-formed, growing count on ``channel`` (a non-blocking socket)
    to ``report``, until the parser's end of it closes. Run it as a task and cancel it when the
    parse ends; it never raises for what the parser sends."""
    loop = asyncio.get_running_loop()
    last = -1
    while True:
        try:
            message = await loop.sock_recv(channel, MAX_MESSAGE_BYTES + 1)
        except OSError:
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
