"""Every Python, shell and TOML block of README.md and docs/ runs as pasted (tests/docs/runner.py
says how), so a page cannot rot. A block that cannot run alone says why, right before it:
``<!-- snippet: skip (REASON) -->`` (docs/testing.md, "The documentation's snippets")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, Block, MarkerError, blocks, pages, units
from tests.docs.runner import Setting, run_python, run_shell, run_toml
from tests.worker.support import Spawned

MAX_SKIPPED = 20
"""Blocks that may stay unrun: excerpts of the project's own code, benchmarks, installs."""
PAGES = [page.relative_to(ROOT).as_posix() for page in pages()]


def every_block() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def test_skipped_blocks_are_few_and_say_why() -> None:
    found = every_block()
    skipped = [block for block in found if block.skip is not None]
    assert all(block.skip for block in skipped)
    assert len(found) > 60, "the pages lost their snippets, or the parser its way"
    assert len(skipped) <= MAX_SKIPPED, "\n".join(f"{b.where}: {b.skip}" for b in skipped)


def test_a_marker_without_a_reason_or_unknown_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "probe.md"
    for marker, problem in (
        ("<!-- snippet: skip () -->", "needs a reason"),
        ("<!-- snippet: skip -->", "unknown snippet marker"),
        ("<!-- snippet: later -->", "unknown snippet marker"),
    ):
        page.write_text(f"text\n\n{marker}\n```python\nprint(1)\n```\n", encoding="utf-8")
        with pytest.raises(MarkerError, match=problem):
            blocks(page, "probe.md")


@pytest.mark.parametrize("page", PAGES)
def test_page_snippets_run(page: str, setting: Setting, worker: Spawned) -> None:
    for unit in units(blocks(ROOT / page)):
        if unit.first.skip is not None:
            continue
        run = {"python": run_python, "shell": run_shell, "toml": run_toml}[unit.first.language]
        run(unit, setting)
