"""Fixtures of the storage family's tests: each test runs once per kind of storage."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolcalls.activities.storage import InMemoryStorage, SQLiteStorage, Storage


@pytest.fixture(params=["memory", "sqlite"])
def make_storage(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., Storage]]:
    """A factory of storages, ``memory`` then ``sqlite``: every SQLite instance opens the same
    file (as separate workers would) and memory has one instance per namespace, so both kinds
    share what they store; all are closed after the test."""
    made: list[Storage] = []
    shared: dict[str, InMemoryStorage] = {}

    def factory(namespace: str = "tool-values") -> Storage:
        storage: Storage
        if request.param == "sqlite":
            storage = SQLiteStorage(tmp_path / "kv.db", namespace)
        else:
            storage = shared.setdefault(namespace, InMemoryStorage(namespace))
        made.append(storage)
        return storage

    yield factory
    for storage in made:
        storage.close()
