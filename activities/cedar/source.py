"""Cedar policy files as text: where each policy starts, and where a parse error is.

``cedarpy`` reports a parse error without its place (``unexpected token `lik```), so the files are
split into statements here (each ends at a ``;`` outside strings and comments), and the first
statement Cedar refuses is the one at fault: its line, and the column of the token named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_TOKEN = re.compile(r"unexpected token `([^`]+)`")


class PolicyError(ValueError):
    """A policy file that cannot be used; the message (one line) says where and why."""


@dataclass(frozen=True)
class Statement:
    """One policy's text and where it starts."""

    text: str
    path: Path
    line: int
    column: int

    def where(self, offset: int = 0) -> str:
        """``file:line:column`` of ``offset`` characters into this statement."""
        before = self.text[:offset]
        newlines = before.count("\n")
        column = len(before) - before.rfind("\n") if newlines else self.column + len(before)
        return f"{self.path}:{self.line + newlines}:{column}"


def statements(path: Path, text: str) -> list[Statement]:
    """The statements of one file, with their positions (comments and blank text skipped)."""
    found: list[Statement] = []
    start: int | None = None
    i = 0
    while i < len(text):
        char = text[i]
        if char == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if start is None and not char.isspace():
            start = i
        if char == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif char == ";" and start is not None:
            found.append(_statement(path, text, start, i + 1))
            start = None
        i += 1
    if start is not None:
        found.append(_statement(path, text, start, len(text)))
    return found


def _statement(path: Path, text: str, start: int, end: int) -> Statement:
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return Statement(text=text[start:end], path=path, line=line, column=column)


def parse_problem(statement: Statement, message: str) -> str:
    """``message`` (Cedar's) placed at the token it names, or at the statement's end."""
    token = _TOKEN.search(message)
    offset = statement.text.find(token.group(1)) if token else -1
    if offset < 0:
        offset = len(statement.text.rstrip()) if "end of input" in message else 0
    return f"{statement.where(offset)}: {message}"
