"""Every Python, shell and TOML block of README.md and docs/ runs as pasted (tests/docs/runner.py
says how), so a page cannot rot. A block that cannot run alone says why, right before it:
``<!-- snippet: skip (REASON) -->`` (docs/testing.md, "The documentation's snippets")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, Block, MarkerError, blocks, pages, units
from tests.docs.runner import Setting, commands, run_cedar, run_python, run_shell, run_toml
from tests.worker.support import Spawned

MAX_SKIPPED = 19
"""Blocks that may stay unrun, each with its reason: excerpts of the project's own code or of a
workflow, transcripts that need a call's own request id or a standing grant, benchmarks. Lower
it when a block comes to run; raising it needs a page that cannot do better."""
PAGES = [page.relative_to(ROOT).as_posix() for page in pages()]


def skipped_blocks() -> list[Block]:
    """Every block not run: a skipped unit's own block and those that continue it."""
    return [
        block
        for page in pages()
        for unit in units(blocks(page))
        if unit.first.skip is not None
        for block in unit.blocks
    ]


def test_skipped_blocks_are_few_and_say_why() -> None:
    found = [block for page in pages() for block in blocks(page)]
    skipped = skipped_blocks()
    assert len(found) > 60, "the pages lost their snippets, or the parser its way"
    assert len(skipped) <= MAX_SKIPPED, "\n".join(f"{b.where}: {b.skip}" for b in skipped)
    # Every page runs at least one block, but those whose blocks are excerpts or rewrite this
    # checkout (testing.md's re-recording).
    unrun = {b.page for b in found} - {b.page for b in found if b not in skipped}
    assert unrun <= {"docs/adding-a-family.md", "docs/reaching-calls.md", "docs/testing.md"}


def test_pages_start_calls_of_their_own() -> None:
    """The pages share one server, and an id runs one call, once: a page that reused an id
    another page starts would find that call (already approved, say) instead of its own."""
    starters: dict[str, set[str]] = {}
    for page in pages():
        for unit in units(blocks(page)):
            if unit.first.skip is None and unit.first.language == "shell":
                for command in commands(unit):
                    if command.startswith("toolcalls call "):
                        for workflow_id in re.findall(r"--id\s+(\S+)", command):
                            starters.setdefault(workflow_id, set()).add(unit.first.page)
    assert starters, "no page starts a call with --id any more"
    shared = {workflow_id: pages for workflow_id, pages in starters.items() if len(pages) > 1}
    assert not shared, shared


def test_continues_joins_and_a_transcript_runs_only_its_commands(tmp_path: Path) -> None:
    page = tmp_path / "probe.md"
    page.write_text(
        "```sh\nexport A=1  # set\n# a comment\necho one \\\n  two\n```\n\n"
        '```toml\n[codec]\n```\n\n<!-- snippet: continues -->\n```sh\n$ echo "$A"\n1\n```\n',
        encoding="utf-8",
    )
    shell, toml = units(blocks(page, "probe.md"))
    assert [block.line for block in shell.blocks] == [1, 13]
    assert toml.first.language == "toml"
    assert commands(shell) == ["export A=1  # set", "echo one    two", 'echo "$A"']


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
def test_page_snippets_run(
    page: str, setting: Setting, worker: Spawned, deployment_worker: Spawned
) -> None:
    for unit in units(blocks(ROOT / page)):
        if unit.first.skip is not None:
            continue
        run = {"python": run_python, "shell": run_shell, "toml": run_toml, "cedar": run_cedar}[
            unit.first.language
        ]
        run(unit, setting)
