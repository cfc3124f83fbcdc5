"""The ``[storage]`` section: what enabled storage tools need, and the families built from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolcalls.activities.storage import InMemoryStorage, SQLiteStorage, StorageTools
from toolcalls.activities.storage.settings import MAX_VALUE_BYTES_CEILING
from toolcalls.worker.config import ConfigError, build_catalog, load_config, parse_config
from toolcalls.worker.plugin import build_instances

READS = ["get_value", "list_keys"]
WRITES = ["set_value", "delete_value"]


def problems(**data: Any) -> str:
    config = parse_config({"tools": READS + WRITES, **data})
    with pytest.raises(ConfigError) as caught:
        build_catalog(config)
    return str(caught.value)


def test_write_tools_need_allow_write() -> None:
    message = problems()
    assert "storage.allow_write: set_value needs it" in message
    assert "storage.allow_write: delete_value needs it" in message
    reads = parse_config({"tools": READS})
    assert [spec.name for spec in build_catalog(reads)] == READS


def test_database_must_be_absolute_with_an_existing_directory(tmp_path: Path) -> None:
    allowed = {"allow_write": True}
    relative = problems(storage={**allowed, "database": "kv.db"})
    assert "storage.database: kv.db is not an absolute path" in relative
    missing = problems(storage={**allowed, "database": str(tmp_path / "no" / "kv.db")})
    assert f"storage.database: directory {tmp_path / 'no'} does not exist" in missing
    directory = problems(storage={**allowed, "database": str(tmp_path)})
    assert f"storage.database: {tmp_path} is a directory" in directory
    good = parse_config(
        {"tools": READS + WRITES, "storage": {**allowed, "database": str(tmp_path / "kv.db")}}
    )
    assert len(build_catalog(good).names) == 4


def test_the_directory_must_exist_only_where_the_tools_run() -> None:
    elsewhere = parse_config(
        {
            "tools": READS,
            "worker": {"serve_tools": False},
            "storage": {"database": "/on/the/storage/host/kv.db"},
        }
    )
    assert build_catalog(elsewhere).names == READS


def test_the_value_limit_has_a_ceiling() -> None:
    with pytest.raises(ConfigError, match=r"storage\.max_value_bytes: Input should be less"):
        parse_config({"storage": {"max_value_bytes": MAX_VALUE_BYTES_CEILING + 1}})


def test_families_use_sqlite_when_a_database_is_set(tmp_path: Path) -> None:
    file = tmp_path / "toolcalls.toml"
    file.write_text(
        'tools = ["get_value", "set_value"]\n'
        f'[storage]\ndatabase = "{tmp_path / "kv.db"}"\nnamespace = "agent-a"\n'
        "allow_write = true\nmax_keys = 7\n"
    )
    config = load_config(file)
    catalog = build_catalog(config)
    family = build_instances(config, catalog, catalog.names)[StorageTools]
    assert isinstance(family, StorageTools)
    assert isinstance(family.storage, SQLiteStorage)
    assert (family.storage.path, family.storage.namespace) == (tmp_path / "kv.db", "agent-a")
    assert family.settings.max_keys == 7
    assert not (tmp_path / "kv.db").exists()  # opened on first use, in an activity's thread


def test_families_keep_values_in_memory_without_a_database() -> None:
    config = parse_config({"tools": READS})
    catalog = build_catalog(config)
    family = build_instances(config, catalog, catalog.names)[StorageTools]
    assert isinstance(family, StorageTools)
    assert isinstance(family.storage, InMemoryStorage)
    assert StorageTools not in build_instances(config, catalog, [])
