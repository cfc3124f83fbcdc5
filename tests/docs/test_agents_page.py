"""docs/agents.md shows each adapter in a few lines a user writes: every Python block of an
adapter's section runs (tests/docs/test_snippets.py runs the page) and is under
``MAX_USER_LINES`` lines of code, and the section shows the choice between child and inline
calls and says how to swap in a real model."""

from __future__ import annotations

import re

import pytest

from tests.docs.blocks import ROOT, Block, blocks

PAGE = ROOT / "docs" / "agents.md"
MAX_USER_LINES = 20
"""A block of an adapter's section has fewer lines of code (not blank, not a comment)."""
SECTIONS = ("pydantic-ai", "OpenAI Agents SDK", "LangGraph")


def user_lines(text: str) -> list[str]:
    """The lines of code: neither blank nor a comment."""
    return [line for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def section(title: str) -> tuple[str, list[Block]]:
    """The section's prose and its Python blocks."""
    text = PAGE.read_text(encoding="utf-8")
    headings = [(m.start(), m.group(1)) for m in re.finditer(r"^## (.+)$", text, re.M)]
    starts = {name: start for start, name in headings}
    assert title in starts, f"docs/agents.md has no section {title!r}"
    start = starts[title]
    end = min((s for s, _ in headings if s > start), default=len(text))
    first, last = text[:start].count("\n") + 1, text[:end].count("\n") + 1
    found = [b for b in blocks(PAGE) if b.language == "python" and first <= b.line < last]
    return text[start:end], found


def test_counting_skips_blank_lines_and_comments() -> None:
    text = "import x\n\n# why\n    # indented why\nx.run()  # a trailing comment counts\n"
    assert user_lines(text) == ["import x", "x.run()  # a trailing comment counts"]


@pytest.mark.parametrize("title", SECTIONS)
def test_each_adapter_block_is_under_twenty_lines_and_runs(title: str) -> None:
    _, found = section(title)
    assert found, f"{title}: no Python block"
    for block in found:
        assert block.skip is None, f"{block.where}: skipped ({block.skip}); the page must run it"
        lines = user_lines(block.text)
        assert len(lines) < MAX_USER_LINES, f"{block.where}: {len(lines)} lines of user code"
        assert all(len(line) <= 100 for line in block.text.splitlines()), block.where
    code = "\n".join(block.text for block in found)
    shown = re.search(r"agent_worker\(\s*client, task_queue=", code)
    assert shown, f"{title}: the worker is not shown"
    assert ".execute(" in code, f"{title}: the agent is not run"


@pytest.mark.parametrize("title", SECTIONS)
def test_each_adapter_shows_child_or_inline_and_a_real_model(title: str) -> None:
    prose, found = section(title)
    code = "\n".join(block.text for block in found)
    assert re.search(r"inline=True\).*inline=False|inline=True.*# False", code), title
    assert "**Child or inline" in prose, f"{title}: the choice is not explained"
    assert "A real model" in prose, f"{title}: how to swap in a real model is not said"
