"""The documentation site: ``mkdocs build --strict`` renders the facade's API reference from its
docstrings, and a broken link fails the build (``make docs``; the tools are the ``docs`` extra).
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolcalls

ROOT = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT = 120
"""Seconds one build may take; it takes a few."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    tools = ("mkdocs", "material", "mkdocstrings_handlers.python")
    missing = [module for module in tools if not _installed(module)]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not installed: install the docs extra "
            "(pip install -e '.[docs]', which make does)"
        )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=config_dir,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )


def _text(page: str) -> str:
    """A page's visible text, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _summary(obj: object) -> str:
    """The first line of a docstring, as the page shows it (reST literals become code)."""
    return (obj.__doc__ or "").strip().splitlines()[0].replace("``", "")


def test_the_reference_renders_the_facade(tmp_path: Path) -> None:
    built = _build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stderr
    page = (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8")
    # The facade imports its names only under TYPE_CHECKING: these summaries come from the real
    # classes, which griffe reaches through toolcalls/'s links to the top-level folders.
    text = _text(page)
    for cls in (toolcalls.ToolCallWorkflow, toolcalls.ToolCallsPlugin):
        assert _summary(cls) in text, cls
    # A name the facade cannot give yet (its module does not define it) has nothing to render.
    exported = [name for name in toolcalls.__all__ if hasattr(toolcalls, name)]
    unrendered = [name for name in exported if f'id="toolcalls.{name}"' not in page]
    assert not unrendered, f"docs/reference.md does not render {unrendered}"


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "toolcalls").symlink_to(ROOT / "toolcalls", target_is_directory=True)
    with (tmp_path / "docs" / "tools.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the missing page](no-such-page.md).\n")
    built = _build(tmp_path, tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-page.md" in built.stderr
