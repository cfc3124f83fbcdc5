"""Finding the lines of a file's bytes that contain a literal query.

Pure functions over bytes already read; no I/O. Matching happens on the whole buffer before any
line is split out, so a file without a match costs one ``bytes.find`` (about 2 GB/s). Case
sensitive queries match the UTF-8 bytes exactly. Case-insensitive matching is Unicode case
folding (``str.casefold``); for an ASCII query in an ASCII file that is ``bytes.lower`` on the
buffer, several times faster than a compiled ``re.IGNORECASE`` pattern (measured: 6 ms against
39 ms for 7.7 MB), and other files are decoded and folded once.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LINE_CHARS = 500
"""Characters of a matching line a result carries (the spec's 500)."""
LEAD_CHARS = 100
"""When a long line is cut around a match beyond its first 500 characters, what precedes it."""


@dataclass(frozen=True)
class LineMatch:
    line: int
    """One-based line number."""
    text: str
    text_truncated: bool


class Matcher:
    """A literal query, prepared once for every file of a search."""

    def __init__(self, query: str, *, case_sensitive: bool) -> None:
        self.case_sensitive = case_sensitive
        self.needle = query.encode("utf-8")
        self.folded = query.casefold()
        self.folded_ascii = self.folded.encode("ascii") if self.folded.isascii() else None

    def lines(self, data: bytes, limit: int) -> list[LineMatch]:
        """The first ``limit`` lines of ``data`` that contain the query, one match per line."""
        if self.case_sensitive:
            return _byte_lines(data, data, self.needle, limit)
        if data.isascii():
            if self.folded_ascii is None:
                return []  # an ASCII text folds to ASCII, which cannot hold this query
            return _byte_lines(data, data.lower(), self.folded_ascii, limit)
        return _text_lines(data.decode("utf-8", errors="replace"), self.folded, limit)


def _byte_lines(data: bytes, haystack: bytes, needle: bytes, limit: int) -> list[LineMatch]:
    """Lines of ``data`` where ``haystack`` (``data`` or a same-size fold of it) has ``needle``."""
    found: list[LineMatch] = []
    pos = 0
    line = 1
    counted = 0
    while len(found) < limit:
        at = haystack.find(needle, pos)
        if at < 0:
            break
        start = data.rfind(b"\n", pos, at) + 1 or pos
        end = data.find(b"\n", at)
        if end < 0:
            end = len(data)
        line += data.count(b"\n", counted, start)
        counted = start
        raw = data[start:end]
        column = len(raw[: at - start].decode("utf-8", errors="replace"))
        width = len(needle.decode("utf-8", errors="replace"))
        found.append(_excerpt(raw.decode("utf-8", errors="replace"), column, width, line))
        pos = end + 1
    return found


def _text_lines(text: str, folded_query: str, limit: int) -> list[LineMatch]:
    """Lines of ``text`` whose case fold contains ``folded_query``."""
    folded = text.casefold()
    at = folded.find(folded_query)
    if at < 0:
        return []
    # Folding may lengthen characters (ß -> ss) but never adds or removes a newline, so line
    # numbers in the fold are the text's; columns are approximate.
    lines = text.split("\n")
    found: list[LineMatch] = []
    index = 0
    counted = 0
    while at >= 0 and len(found) < limit:
        index += folded.count("\n", counted, at)
        counted = at
        column = at - (folded.rfind("\n", 0, at) + 1)
        found.append(_excerpt(lines[index], column, len(folded_query), index + 1))
        end = folded.find("\n", at)
        if end < 0:
            break
        at = folded.find(folded_query, end + 1)
    return found


def _excerpt(line: str, column: int, width: int, number: int) -> LineMatch:
    """At most ``MAX_LINE_CHARS`` of ``line``: its start, or a window around a later match."""
    line = line.removesuffix("\r")
    if len(line) <= MAX_LINE_CHARS:
        return LineMatch(number, line, False)
    start = 0
    if column + width > MAX_LINE_CHARS:
        start = max(0, min(column - LEAD_CHARS, len(line) - MAX_LINE_CHARS))
    return LineMatch(number, line[start : start + MAX_LINE_CHARS], True)
