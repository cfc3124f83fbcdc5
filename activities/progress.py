"""Publishing a running tool's progress to its call: batched, deduplicated, redacted.

A tool opens a ``ProgressPublisher`` for the time it runs and hands it entries (``add``, or
``extend`` with a ``LineSplitter``'s lines). A background task sends what has gathered as one
signal (``ProgressBatch``) every ``PUBLISH_INTERVAL`` seconds, never one per line; closing the
publisher sends the rest, except counts (the result has the final ones), and nothing at all when
the tool ended before the first tick (its result holds everything: a short call costs no signal).
Each batch says where its entries start among everything this activity published (``first``),
and the call skips positions it already holds: a signal delivered twice, or output produced again
by a retried attempt, is not appended twice.

Publishing never fails a tool: a batch that cannot be sent is tried again at the next tick, and
after ``GIVE_UP_AFTER`` seconds of failures the publisher stops (the result is unaffected). A tool
run outside a ``ToolCallWorkflow`` (a local activity, a parent's own activity) publishes nothing.

``Redactor``: the values of a command's environment never leave in an item (see
docs/progress.md, "What an item never holds").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from types import TracebackType

from temporalio import activity

from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.workflows.models.call import WORKFLOW_NAME
from toolcalls.workflows.models.progress import (
    MAX_BATCH_ITEMS,
    MAX_TEXT_CHARS,
    PROGRESS_SIGNAL,
    ProgressBatch,
    ProgressEntry,
    ProgressKind,
)

log = logging.getLogger(__name__)

PUBLISH_INTERVAL = 0.5
"""Seconds between two batches of one publisher."""
MAX_BATCH_CHARS = 256 * 1024
"""Characters of text in one batch (a signal stays well below Temporal's payload warning)."""
GIVE_UP_AFTER = 60.0
"""Seconds of failed sends after which a publisher stops publishing."""
FINAL_FLUSH = 5.0
"""Seconds closing a publisher may spend sending what is left."""
MIN_SECRET_CHARS = 6
"""Environment values shorter than this are not redacted: they would blank ordinary words."""
NOT_SECRET = frozenset(
    {"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "SHELL", "USER", "LOGNAME", "PWD", "TMPDIR"}
)
"""Variables whose values are locations and settings, not secrets."""
REDACTED = b"[redacted]"

Sender = Callable[[ProgressBatch], Awaitable[None]]


class Redactor:
    """Replaces every line of every secret value (``MIN_SECRET_CHARS`` or longer) in bytes."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        secrets: set[bytes] = set()
        for name, value in (env or {}).items():
            if name in NOT_SECRET or name.startswith("LC_"):
                continue
            for part in value.splitlines():
                if len(part) >= MIN_SECRET_CHARS:
                    secrets.add(part.encode())
        self.secrets = sorted(secrets, key=len, reverse=True)
        self.longest = len(self.secrets[0]) if self.secrets else 0

    def __call__(self, data: bytes) -> bytes:
        for secret in self.secrets:
            if secret in data:
                data = data.replace(secret, REDACTED)
        return data


class LineSplitter:
    """Cuts one channel's bytes into lines (without their newline) for ``kind`` entries.

    A line longer than ``MAX_TEXT_CHARS`` bytes is cut into pieces; the tail kept back before a
    cut is one byte short of the longest secret, so that no secret is ever split across pieces.
    """

    def __init__(self, kind: ProgressKind, redact: Redactor) -> None:
        self.kind = kind
        self.redact = redact
        self.partial = bytearray()

    def feed(self, chunk: bytes) -> list[ProgressEntry]:
        self.partial += chunk
        *lines, rest = bytes(self.partial).split(b"\n")
        entries = [piece for line in lines for piece in self._pieces(self.redact(line))]
        rest = self.redact(rest)
        keep = max(self.redact.longest - 1, 0)
        while len(rest) - keep >= MAX_TEXT_CHARS:
            cut = MAX_TEXT_CHARS
            while cut > 1 and rest[cut] & 0xC0 == 0x80:  # not inside a UTF-8 character
                cut -= 1
            entries += self._pieces(rest[:cut])
            rest = rest[cut:]
        self.partial = bytearray(rest)
        return entries

    def end(self) -> list[ProgressEntry]:
        """The last line, if the output did not end with a newline."""
        if not self.partial:
            return []
        line, self.partial = bytes(self.partial), bytearray()
        return self._pieces(self.redact(line))

    def _pieces(self, line: bytes) -> list[ProgressEntry]:
        """A redacted line as entries of ``MAX_TEXT_CHARS`` characters at most."""
        text = line.removesuffix(b"\r").decode("utf-8", errors="replace")
        return [
            ProgressEntry(kind=self.kind, text=text[start : start + MAX_TEXT_CHARS])
            for start in range(0, max(len(text), 1), MAX_TEXT_CHARS)
        ]


class ProgressPublisher:
    """Gathers one activity's entries and sends them to its call in batches."""

    def __init__(self, send: Sender, publisher: str, *, interval: float = PUBLISH_INTERVAL) -> None:
        self._send = send
        self.publisher = publisher
        self.interval = interval
        self._buffer: list[ProgressEntry] = []
        self._sent = 0
        """Entries confirmed sent: the next batch's ``first``."""
        self._failing_since: float | None = None
        self._stopped = False
        self._ticks = 0
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def for_activity(cls) -> ProgressPublisher | None:
        """A publisher to the call running this activity; ``None`` outside a ``ToolCallWorkflow``
        (a local activity, another workflow's activity, or no activity at all)."""
        if not activity.in_activity():
            return None
        info = activity.info()
        if info.is_local or info.workflow_type != WORKFLOW_NAME or not info.workflow_id:
            return None
        try:
            client = activity.client()
        except RuntimeError:  # an ActivityEnvironment without a client: nowhere to publish
            return None
        handle = client.get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)

        async def send(batch: ProgressBatch) -> None:
            await handle.signal(PROGRESS_SIGNAL, batch)

        return cls(send, info.activity_id)

    def add(
        self,
        kind: ProgressKind,
        text: str = "",
        *,
        done: int | None = None,
        total: int | None = None,
    ) -> None:
        """One entry; a count (``done``) replaces a count of the same kind not yet sent."""
        entry = ProgressEntry(kind=kind, text=text[:MAX_TEXT_CHARS], done=done, total=total)
        if done is not None and self._buffer and self._buffer[-1].kind is kind:
            self._buffer[-1] = entry
            return
        self._buffer.append(entry)

    def extend(self, entries: Iterable[ProgressEntry]) -> None:
        self._buffer.extend(entries)

    async def flush(self) -> None:
        """Send everything gathered so far (one batch at a time, in order)."""
        async with self._lock:
            while self._buffer and not self._stopped:
                if not await self._send_one():
                    return

    async def _send_one(self) -> bool:
        entries: list[ProgressEntry] = []
        chars = 0
        for entry in self._buffer[:MAX_BATCH_ITEMS]:
            chars += len(entry.text)
            if entries and chars > MAX_BATCH_CHARS:
                break
            entries.append(entry)
        batch = ProgressBatch(publisher=self.publisher, first=self._sent, entries=entries)
        try:
            await self._send(batch)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failed send is tried again, never fails the tool
            now = time.monotonic()
            if self._failing_since is None:
                self._failing_since = now
                log.warning("progress of %s: a batch was not sent: %s", self.publisher, exc)
            if now - self._failing_since > GIVE_UP_AFTER:
                log.warning("progress of %s: stopped publishing", self.publisher)
                self._stopped = True
            return False
        self._failing_since = None
        self._sent += len(entries)
        del self._buffer[: len(entries)]
        return True

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._ticks += 1
            await self.flush()

    async def __aenter__(self) -> ProgressPublisher:
        self._task = asyncio.create_task(self._run())
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
        # Counts are for the wait: the result has the final figures. A tool that ended before the
        # first tick publishes nothing at all (its result holds it all): a short call costs what
        # it did before the stream existed.
        self._buffer = [entry for entry in self._buffer if entry.done is None]
        if not self._ticks:
            self._buffer.clear()
            return
        try:
            await asyncio.wait_for(self.flush(), FINAL_FLUSH)
        except TimeoutError:
            log.warning("progress of %s: the last entries were not sent", self.publisher)


@contextlib.asynccontextmanager
async def published(publisher: ProgressPublisher | None) -> AsyncIterator[ProgressPublisher | None]:
    """``publisher`` open for the block (or ``None``, when there is nowhere to publish)."""
    if publisher is None:
        yield None
        return
    async with publisher:
        yield publisher


def received(beat: Heartbeat, publisher: ProgressPublisher | None) -> Callable[[int], None]:
    """An ``on_progress`` for a download: the bytes received so far, in the heartbeat and (as a
    ``bytes`` count) in the call's stream."""

    def update(done: int) -> None:
        beat.update(bytes=done)
        if publisher is not None:
            publisher.add(ProgressKind.BYTES, done=done)

    return update


def scanned(
    beat: Heartbeat, publisher: ProgressPublisher | None
) -> Callable[[int, int | None], None]:
    """An ``on_progress`` for an email listing: the messages scanned so far (and how many it
    will scan, when known), in the heartbeat and (as a ``messages`` count) in the call's stream."""

    def update(done: int, total: int | None) -> None:
        beat.update(messages=done)
        if publisher is not None:
            publisher.add(ProgressKind.MESSAGES, done=done, total=total)

    return update


def from_thread(update: Callable[[int, int | None], None]) -> Callable[[int, int | None], None]:
    """``update`` for a worker thread to call: it runs on the current event loop (where the
    heartbeat and the publisher live), in the order the thread called it."""
    loop = asyncio.get_running_loop()

    def report(done: int, total: int | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens any more
            loop.call_soon_threadsafe(update, done, total)

    return report
