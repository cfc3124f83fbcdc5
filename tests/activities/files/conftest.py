"""Fixtures of the file family's tests: a real root, the read tools over it, the write tools."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.file_writes import Files
from tests.support.filetrees import read_tools, real_root
from toolcalls.activities.files.reading import FileReadTools


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root directory under the test's tmp path, with its real (link-free) path."""
    return real_root(tmp_path)


@pytest.fixture
def tools(root: Path) -> Iterator[FileReadTools]:
    """The read tools over ``root`` with the default settings (modules override for others)."""
    with read_tools(root) as tools:
        yield tools


@pytest.fixture
def files(tmp_path: Path) -> Iterator[Files]:
    """The write tools over a root and a checkpoint store in ``tmp_path``."""
    files = Files(tmp_path)
    yield files
    files.close()
