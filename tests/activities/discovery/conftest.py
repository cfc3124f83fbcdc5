"""Fixtures of the discovery family's tests: a real deployment's catalog and the tools over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcalls.activities.catalog import Catalog
from toolcalls.worker.config import build_catalog, parse_config

TOOLS = [
    "calculator",
    "current_datetime",
    "ask_user",
    "read_file",
    "list_files",
    "search_files",
    "fetch_url",
    "get_value",
    "list_keys",
    "search_tools",
    "read_tool",
]
"""A deployment of reads: the core tools, file and storage reads, a fetch, and discovery."""


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    """The catalog a worker of that deployment builds, with a ``reads`` profile of three tools."""
    root = tmp_path / "root"
    root.mkdir()
    return build_catalog(
        parse_config(
            {
                "tools": TOOLS,
                "state_dir": str(tmp_path / "state"),
                "files": {"roots": [str(root)]},
                "profiles": {"reads": {"tools": ["read_file", "get_value", "search_tools"]}},
            }
        )
    )
