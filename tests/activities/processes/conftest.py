"""Fixtures of the process family's tests: a real root folder and the tools confined to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import make_tools
from toolcalls.activities.processes.commands import ProcessTools


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The one configured root, ``tmp_path/root``, where commands run."""
    path = tmp_path / "root"
    path.mkdir()
    return path


@pytest.fixture
def tools(tmp_path: Path, root: Path) -> ProcessTools:
    """``execute_command`` and ``run_shell`` confined to ``root``, with a half-second kill grace."""
    return make_tools(tmp_path, root, kill_grace=0.5)
