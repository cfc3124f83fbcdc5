"""One ``search_files`` run: its byte budget, its matches, and the limits that end it.

Runs in the worker thread that walks the tree; the ``Progress`` it updates is read by the event
loop for heartbeats (plain integer attributes, so a read never sees a torn value).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass

from toolcalls.activities.files.matching import Matcher
from toolcalls.activities.files.read_models import SearchMatch
from toolcalls.activities.files.tree import Skip, WalkStats

MAX_SEARCH_BYTES = 32 * 1024 * 1024
"""File content one search reads in total (the spec's 32 MiB)."""
MAX_RESULT_BYTES = 512 * 1024
"""JSON size of a result's items: 1,000 long paths or lines must stay under the 1 MiB cap."""
_ITEM_OVERHEAD = 64
"""JSON bytes of an item besides its strings (keys, numbers, punctuation), rounded up."""
_MAX_READ = 16 * 1024 * 1024


@dataclass
class Progress:
    """What a search has done so far, as its heartbeats report it."""

    scanned: int = 0
    files_searched: int = 0
    bytes_read: int = 0
    matches: int = 0


class Search:
    """The state of one search across the files it is given."""

    def __init__(self, matcher: Matcher, *, max_results: int, max_file_bytes: int) -> None:
        self.matcher = matcher
        self.max_results = max_results
        self.max_file_bytes = max_file_bytes
        self.stats = WalkStats()
        self.items: list[SearchMatch] = []
        self.progress = Progress()
        self.result_bytes = 0
        self.done = False
        """A limit was reached: nothing more may be searched."""

    def file(self, fd: int, path: str) -> None:
        """Search one open file, unless it is not a regular text file within the limits."""
        progress = self.progress
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                # It was a regular file when listed; something replaced it since.
                self.stats.skip(Skip.UNREADABLE)
                return
            if info.st_size > self.max_file_bytes:
                self.stats.skip(Skip.OVERSIZED)
                return
            if progress.bytes_read + info.st_size > MAX_SEARCH_BYTES:
                self._limit_reached()
                return
            # The size fstat reported is what is searched: content appended since is not read.
            data = read_up_to(fd, info.st_size)
        except OSError as exc:
            self.stats.skip_error(exc)
            return
        progress.bytes_read += len(data)
        if b"\x00" in data:
            self.stats.skip(Skip.BINARY)
            return
        progress.files_searched += 1
        room = self.max_results - len(self.items)
        found = self.matcher.lines(data, room + 1)
        for match in found[:room]:
            self.result_bytes += json_size(path) + json_size(match.text) + _ITEM_OVERHEAD
            if self.result_bytes > MAX_RESULT_BYTES:
                self._limit_reached()
                return
            self.items.append(
                SearchMatch(
                    path=path, line=match.line, text=match.text, text_truncated=match.text_truncated
                )
            )
        progress.matches = len(self.items)
        if len(found) > room:
            self._limit_reached()

    def _limit_reached(self) -> None:
        self.stats.truncated = True
        self.done = True


def read_up_to(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd``'s current position, fewer at the end of the file."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, _MAX_READ))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def json_size(text: str) -> int:
    """Bytes ``text`` takes as a JSON string (control characters escape to six)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", errors="surrogatepass"))
