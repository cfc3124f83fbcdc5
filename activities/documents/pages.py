"""Pages done, from the parser process to the worker, over the socket its job came by.

The parser (``extract``) keeps the ``SOCK_SEQPACKET`` socket its job arrived on and, while it
reads a PDF, sends one message ``{"done": N, "total": M}`` at most every ``REPORT_INTERVAL``
seconds (``PageReporter``), never waiting for the worker: a message the socket has no room for
is dropped. A document read within the first interval sends nothing.

The worker (``progress``, beside this file) reads these messages as the untrusted input they
are: each into ``MAX_MESSAGE_BYTES + 1`` bytes, one every ``READ_INTERVAL`` seconds at most (a
parser that floods the socket costs the worker nothing more), and takes only what ``page_count``
accepts: a JSON object of two whole numbers, ``0 <= done <= total <= MAX_PAGES``, in at most
``MAX_MESSAGE_BYTES``; and only a ``done`` that grows. A report reaches the heartbeat and the
call's progress stream, never the result.

Loaded by its path in the parser process, like ``extraction``: it imports nothing from the
project, nor anything the parser would not otherwise load (``asyncio`` is the worker's).
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable

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
