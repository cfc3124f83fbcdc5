"""Bounded unified diffs of file contents, for approval previews and restoration previews."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from toolcalls.activities.files.atomic import sha256

MAX_DIFF_BYTES = 131_072
"""Diff text kept in a preview. Previews travel through workflow history like any payload, and
JSON escaping can grow text up to six times, so this keeps one far below the 1 MiB result cap.
The digests in the preview identify the full content either way."""
CONTEXT_LINES = 3
MAX_MATCH_CELLS = 4_000_000
"""Old lines times new lines that ``difflib`` may match, once the common start and end are set
aside. Its matching is far worse than quadratic on repetitive lines or widely scattered changes
(a ``replace_all`` across a 5 MB file took 84 s, 65 KB of repeating lines 67 s), in a thread that
cannot be stopped; above this, lines are compared by position instead, which takes linear time
and gives a correct diff, only not a minimal one when lines were inserted or removed."""


@dataclass(frozen=True)
class Diff:
    text: str
    truncated: bool
    binary: bool


def unified_diff(path: str, before: bytes | None, after: bytes | None) -> Diff:
    """The diff from ``before`` to ``after`` (``None``: no file), at most ``MAX_DIFF_BYTES``.

    Content that is not UTF-8 text (or holds a NUL) is summarised by size and digest instead.
    """
    old, new = _text(before), _text(after)
    if old is None or new is None:
        return Diff(
            f"binary content: {_describe(before)} -> {_describe(after)}\n",
            truncated=False,
            binary=True,
        )
    lines = _unified(
        _lines(old),
        _lines(new),
        f"a{path}" if before is not None else "/dev/null",
        f"b{path}" if after is not None else "/dev/null",
    )
    parts: list[str] = []
    size = 0
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        encoded = len(line.encode())
        if size + encoded > MAX_DIFF_BYTES:
            parts.append(f"... diff truncated at {MAX_DIFF_BYTES} bytes\n")
            return Diff("".join(parts), truncated=True, binary=False)
        parts.append(line)
        size += encoded
    return Diff("".join(parts), truncated=False, binary=False)


def _unified(a: list[str], b: list[str], fromfile: str, tofile: str) -> Iterator[str]:
    """``difflib.unified_diff(a, b, fromfile, tofile, n=CONTEXT_LINES)``, bounded in time.

    Only the part between the common first and last lines (with its context) is matched.
    """
    common = min(len(a), len(b))
    head = 0
    while head < common and a[head] == b[head]:
        head += 1
    if head == len(a) == len(b):
        return
    tail = 0
    while tail < common - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = max(0, head - CONTEXT_LINES)
    kept_tail = max(0, tail - CONTEXT_LINES)
    old, new = a[start : len(a) - kept_tail], b[start : len(b) - kept_tail]
    cells = (len(a) - head - tail) * (len(b) - head - tail)
    matcher = (
        difflib.SequenceMatcher(None, old, new)
        if cells <= MAX_MATCH_CELLS
        else _ByPosition(old, new)
    )
    yield f"--- {fromfile}\n"
    yield f"+++ {tofile}\n"
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        old_range = _range(start + first[1], start + last[2])
        new_range = _range(start + first[3], start + last[4])
        yield f"@@ -{old_range} +{new_range} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in old[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in new[j1:j2])


class _ByPosition(difflib.SequenceMatcher[str]):
    """Line ``i`` of one side against line ``i`` of the other: the runs of equal lines match."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, a, b)
        self.old, self.new = a, b

    def get_matching_blocks(self) -> list[difflib.Match]:
        a, b = self.old, self.new
        blocks: list[difflib.Match] = []
        end = min(len(a), len(b))
        i = 0
        while i < end:
            if a[i] != b[i]:
                i += 1
                continue
            j = i + 1
            while j < end and a[j] == b[j]:
                j += 1
            blocks.append(difflib.Match(i, i, j - i))
            i = j
        blocks.append(difflib.Match(len(a), len(b), 0))
        return blocks


def _range(start: int, stop: int) -> str:
    """A hunk's line range as ``difflib`` writes it: one-based start, and a length unless 1."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    """Lines split at ``\\n`` only (``str.splitlines`` also splits at form feeds and more)."""
    lines = text.split("\n")
    last = lines.pop()
    result = [line + "\n" for line in lines]
    if last:
        result.append(last)
    return result


def _describe(data: bytes | None) -> str:
    if data is None:
        return "no file"
    return f"{len(data)} bytes (sha256 {sha256(data)})"
