"""Fixtures of the document family's tests: a real root and the document tools over it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.documents import document_tools
from tests.support.filetrees import real_root
from toolcalls.activities.documents.tools import DocumentTools


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root directory under the test's tmp path, with its real (link-free) path."""
    return real_root(tmp_path)


@pytest.fixture
async def tools(root: Path) -> AsyncIterator[DocumentTools]:
    """The document tools over ``root`` with the default settings."""
    async with document_tools(root) as tools:
        yield tools
