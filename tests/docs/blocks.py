"""The code blocks of README.md and docs/: what each page asks a reader to paste.

A fenced block in one of ``LANGUAGES`` is a snippet. The line right before its fence may carry
a marker, an HTML comment neither GitHub nor the site shows:

- ``<!-- snippet: skip (REASON) -->``: the block is not run; the reason is required.
- ``<!-- snippet: continues -->``: the block runs together with the page's block of its
  language before it, as one (a Python module split by prose, a TOML section that needs the
  one above, a terminal session).
- ``<!-- snippet: file NAME -->``: the block is saved as ``NAME`` beside the page's later Python
  blocks (a ``workflows.py`` a script imports), and not run by itself.

Pure parsing: no processes, no files written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = {
    "python": "python",
    "sh": "shell",
    "bash": "shell",
    "console": "shell",
    "toml": "toml",
    "cedar": "cedar",
}
"""Fence language -> how the block runs."""
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(?P<body>.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((?P<reason>.*)\)$")
SAVE = re.compile(r"^file\s+(?P<name>[\w.-]+\.py)$")


class MarkerError(ValueError):
    """A snippet marker that says nothing the runner understands."""


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str
    """Relative to the repository: ``README.md``, ``docs/cli.md``."""
    line: int
    """The fence's line, 1-based."""
    language: str
    """``python``, ``shell``, ``toml`` or ``cedar``."""
    fence: str
    """The fence's own language: ``console`` blocks mark commands with ``$ ``."""
    text: str
    skip: str | None = None
    """The reason it is not run."""
    continues: bool = False
    save_as: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Unit:
    """Blocks that run as one: a block and those that continue it."""

    blocks: list[Block] = field(default_factory=list)

    @property
    def first(self) -> Block:
        return self.blocks[0]

    @property
    def text(self) -> str:
        return "\n".join(block.text for block in self.blocks)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _marker(line: str, where: str) -> dict[str, object]:
    match = MARKER.match(line)
    if match is None:
        return {}
    body = match.group("body")
    if body == "continues":
        return {"continues": True}
    if skip := SKIP.match(body):
        reason = skip.group("reason").strip()
        if not reason:
            raise MarkerError(f"{where}: snippet: skip needs a reason in parentheses")
        return {"skip": reason}
    if save := SAVE.match(body):
        return {"save_as": save.group("name")}
    raise MarkerError(f"{where}: unknown snippet marker {body!r}")


def blocks(path: Path, page: str | None = None) -> list[Block]:
    """Every snippet of one page, in order, with its marker; ``page`` names it (default: its
    path in the repository)."""
    page = page or path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if opened is None or not opened.group("lang"):
            index += 1
            continue
        start, indent, fence = index, len(opened.group("indent")), opened.group("lang")
        body: list[str] = []
        index += 1
        while index < len(lines) and not re.match(r"^\s*```\s*$", lines[index]):
            body.append(lines[index][indent:])
            index += 1
        index += 1
        if fence not in LANGUAGES:
            continue
        previous = next((line for line in reversed(lines[:start]) if line.strip()), "")
        marker = _marker(previous, f"{page}:{start + 1}")
        found.append(
            Block(page, start + 1, LANGUAGES[fence], fence, "\n".join(body) + "\n", **marker)  # type: ignore[arg-type]
        )
    return found


def units(found: list[Block]) -> list[Unit]:
    """Join each ``continues`` block to the page's block of its language before it."""
    joined: list[Unit] = []
    for block in found:
        if block.continues:
            same = [unit for unit in joined if unit.first.language == block.language]
            if not same:
                raise MarkerError(f"{block.where}: continues no {block.language} block")
            same[-1].blocks.append(block)
        else:
            joined.append(Unit([block]))
    return joined
