"""Bounded unified diffs of file contents, for approval previews and restoration previews."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from activities.files.atomic import sha256

MAX_DIFF_BYTES = 131_072
"""Diff text kept in a preview. Previews travel through workflow history like any payload, and
JSON escaping can grow text up to six times, so this keeps one far below the 1 MiB result cap.
The digests in the preview identify the full content either way."""
CONTEXT_LINES = 3


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
    lines = difflib.unified_diff(
        _lines(old),
        _lines(new),
        fromfile=f"a{path}" if before is not None else "/dev/null",
        tofile=f"b{path}" if after is not None else "/dev/null",
        n=CONTEXT_LINES,
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
