"""Fixtures of the database family's tests: a real SQLite file with the test schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.databases import make_database, snapshot


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Path]:
    """The test database; after the test, every file next to it is byte-for-byte unchanged."""
    directory = tmp_path / "data"
    directory.mkdir()
    path = make_database(directory / "app.db")
    before = snapshot(directory)
    yield path
    assert snapshot(directory) == before
