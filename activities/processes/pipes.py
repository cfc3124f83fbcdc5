"""A process's stdout and stderr: the pipes, owned by the call that reads them, and what it keeps.

The child gets the write ends; the call reads the read ends and closes them when it ends, whoever
still holds a write end. asyncio's own subprocess pipes stay open until every writer is gone, which
a descendant that left the process group (a new session) can put off for as long as it runs: the
worker would keep the descriptors, and the loop would keep watching them, until then.

Who still holds a pipe is read from ``/proc``: callers run ``pipe_holders`` off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.progress import LineSplitter, ProgressPublisher, Redactor
from toolcalls.workflows.models.progress import ProgressKind

READ_CHUNK = 65_536
DRAIN_AFTER_EXIT = 1.0
"""How long pipes may stay open after the group is killed (a descendant in its own session)."""
TAIL_BYTES = 1_024
"""How much of the latest output each heartbeat carries."""
COMMAND_SHOWN = 200
"""Characters of a command line shown in a log line."""


class Output:
    """stdout and stderr, kept up to a shared byte cap while both pipes keep draining."""

    def __init__(
        self, cap: int, progress: OutputProgress | None = None, redact: Redactor | None = None
    ) -> None:
        self.cap = cap
        self.redact = redact
        """Applied to the heartbeat's tail: a lost worker's last heartbeat is in history."""
        self.progress_stream = progress
        """Where the kept output is published as lines while it runs (``activities.progress``)."""
        self.kept = {"stdout": bytearray(), "stderr": bytearray()}
        self.seen = {"stdout": 0, "stderr": 0}
        self.tail = bytearray()
        self.truncated = False

    def add(self, channel: str, chunk: bytes) -> None:
        self.seen[channel] += len(chunk)
        room = self.cap - len(self.kept["stdout"]) - len(self.kept["stderr"])
        kept = chunk[: max(room, 0)]
        if self.progress_stream is not None and (kept or not self.truncated):
            self.progress_stream.take(channel, kept, cut=len(chunk) > room and not self.truncated)
        if len(chunk) > room:
            self.truncated = True
        self.kept[channel] += kept
        self.tail = (self.tail + chunk)[-TAIL_BYTES:]

    def taker(self, channel: str, heartbeat: Heartbeat | None) -> Callable[[bytes], None]:
        """What a drain of ``channel`` hands its chunks to: kept, and reported in heartbeats."""

        def take(chunk: bytes) -> None:
            self.add(channel, chunk)
            if heartbeat is not None:
                heartbeat.update(**self.progress())

        return take

    def _tail(self) -> bytes:
        if self.redact is None:
            return bytes(self.tail)
        tail = self.redact(bytes(self.tail))
        if sum(self.seen.values()) > len(self.tail):
            # A secret cut at the tail's start would leave a piece no match finds: drop that much.
            tail = tail[self.redact.longest :]
        return tail

    def text(self, channel: str) -> str:
        return bytes(self.kept[channel]).decode("utf-8", errors="replace")

    def progress(self) -> dict[str, object]:
        return {
            "stdout_bytes": self.seen["stdout"],
            "stderr_bytes": self.seen["stderr"],
            "tail": self._tail().decode("utf-8", errors="replace"),
        }


class OutputProgress:
    """A command's output published as lines, stdout and stderr apart, up to the result's cap."""

    def __init__(self, publisher: ProgressPublisher, env: dict[str, str]) -> None:
        self.publisher = publisher
        redact = Redactor(env)
        self.lines = {
            "stdout": LineSplitter(ProgressKind.STDOUT, redact),
            "stderr": LineSplitter(ProgressKind.STDERR, redact),
        }

    def take(self, channel: str, kept: bytes, *, cut: bool) -> None:
        """``kept``: what the result keeps of a chunk; ``cut``: the cap was reached with it."""
        self.publisher.extend(self.lines[channel].feed(kept))
        if cut:
            self.end()
            self.publisher.add(ProgressKind.NOTE, "output beyond the cap is not kept")

    def end(self) -> None:
        for splitter in self.lines.values():
            self.publisher.extend(splitter.end())


class OutputPipes:
    """stdout and stderr for one child: ``(read, write)`` descriptors each."""

    def __init__(self) -> None:
        self._open: list[int] = []
        try:
            self.stdout = self._pipe()
            self.stderr = self._pipe()
        except BaseException:
            self.close()
            raise
        self.inodes = {os.fstat(self.stdout[0]).st_ino, os.fstat(self.stderr[0]).st_ino}
        """What ``/proc/<pid>/fd`` shows for them (``pipe:[inode]``), for ``pipe_holders``."""

    def _pipe(self) -> tuple[int, int]:
        read, write = os.pipe()  # close-on-exec: no other child of the worker inherits them
        self._open += [read, write]
        return read, write

    def close_write_ends(self) -> None:
        """Once the child has its copies: the worker must not keep a writer open itself."""
        self._close((self.stdout[1], self.stderr[1]))

    def close(self) -> None:
        """Close every end still open; the drains must have let go of the read ends."""
        self._close(list(self._open))

    def _close(self, fds: Iterable[int]) -> None:
        for fd in fds:
            if fd in self._open:
                self._open.remove(fd)
                os.close(fd)


async def drain(fd: int, take: Callable[[bytes], None]) -> None:
    """Read pipe ``fd`` to its end (or until cancelled), handing each chunk to ``take``.

    ``fd`` stays open: it belongs to the ``OutputPipes`` that closes it.
    """
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    pipe = io.FileIO(fd, "rb", closefd=False)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    try:
        while chunk := await stream.read(READ_CHUNK):
            take(chunk)
    finally:
        transport.close()  # stops the loop watching ``fd`` before the descriptor is closed


async def finish_drains(drains: Sequence[asyncio.Task[None]]) -> bool:
    """Let the pipes empty, but not forever: a descendant in its own session may hold them.

    Whether a pipe was still open when the drains were stopped.
    """
    _, pending = await asyncio.wait(drains, timeout=DRAIN_AFTER_EXIT)
    for task in pending:
        task.cancel()
    await asyncio.gather(*drains, return_exceptions=True)
    return bool(pending)


def pipe_holders(inodes: set[int]) -> list[tuple[int, str]]:
    """Each other process with one of the pipes ``inodes`` open, and its command line."""
    wanted = {f"pipe:[{inode}]" for inode in inodes}
    me = os.getpid()
    holders = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/fd/{fd}") in wanted:
                    holders.append((int(entry), command_line(int(entry))))
                    break
    return sorted(holders)


def command_line(pid: int) -> str:
    """``pid``'s argv as a shell would read it, cut to ``COMMAND_SHOWN``; ``?`` if unreadable."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    words = [word.decode("utf-8", errors="replace") for word in raw.split(b"\0") if word]
    return shlex.join(words)[:COMMAND_SHOWN] if words else "?"
