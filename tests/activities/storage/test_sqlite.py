"""What only ``SQLiteStorage`` promises: a durable file in WAL mode, namespaces that stay apart,
writers in several processes, and clean errors when the file is locked, damaged or missing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from toolcalls.activities.storage import SQLiteStorage
from toolcalls.activities.storage.store import Quota, StorageBusy, StorageUnavailable
from toolcalls.activities.storage.values import encode_value

ROOMY = Quota(max_keys=1_000_000, max_store_bytes=1 << 40)


def rows(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT namespace, key, value FROM kv ORDER BY namespace, key").fetchall()


def test_the_file_is_in_wal_mode_and_outlives_the_instance(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    first = SQLiteStorage(path)
    first.put("k", encode_value({"a": [1, 2]}), ROOMY)
    first.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    second = SQLiteStorage(path)
    assert second.get("k") == '{"a":[1,2]}'
    assert second.usage().keys == 1
    second.close()


def test_injection_key_leaves_the_table_intact(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    store = SQLiteStorage(path)
    key = "'; DROP TABLE kv;--"
    store.put("before", "1", ROOMY)
    store.put(key, encode_value(key), ROOMY)
    store.close()
    assert rows(path) == [
        ("tool-values", key, json.dumps(key)),
        ("tool-values", "before", "1"),
    ]


def test_a_key_cannot_reach_another_namespace(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    other = SQLiteStorage(path, "other_ns")
    other.put("secret", '"hunter2"', ROOMY)
    mine = SQLiteStorage(path, "tool-values")
    for key in ("../other_ns/secret", "other_ns/secret", "secret", "other_ns"):
        assert mine.get(key) is None
    assert mine.keys("", 0, 100).keys == []
    assert mine.usage().keys == 0
    mine.put("../other_ns/secret", '"mine"', ROOMY)
    assert other.get("secret") == '"hunter2"'
    assert other.keys("", 0, 100).keys == ["secret"]
    assert mine.delete("secret") is False
    assert rows(path) == [
        ("other_ns", "secret", '"hunter2"'),
        ("tool-values", "../other_ns/secret", '"mine"'),
    ]
    mine.close()
    other.close()


WRITER = textwrap.dedent(
    """
    import sys
    from toolcalls.activities.storage import SQLiteStorage
    from toolcalls.activities.storage.store import Quota

    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SQLiteStorage(path)
    quota = Quota(max_keys=10_000, max_store_bytes=1 << 30)
    for i in range(count):
        store.put(f"{name}/{i:03d}", str(i), quota)
        store.put("shared", f'"{name}"', quota)
    store.close()
    """
)


def test_writers_in_several_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    SQLiteStorage(path).usage()  # create the file, so the processes race only on writes
    names, count = ["p0", "p1", "p2"], 60
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, str(count)], stderr=subprocess.PIPE
        )
        for name in names
    ]
    errors = [proc.communicate(timeout=60)[1].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], errors
    store = SQLiteStorage(path)
    expected = {f"{name}/{i:03d}": str(i) for name in names for i in range(count)}
    listed = store.keys("p", 0, 1000).keys
    assert listed == sorted(expected)
    assert {key: store.get(key) for key in listed} == expected
    assert store.get("shared") in {f'"{name}"' for name in names}
    store.close()


def test_a_held_write_lock_is_a_clean_busy_error_and_readers_go_on(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    store = SQLiteStorage(path, write_busy_timeout_ms=200)
    store.put("k", "1", ROOMY)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE kv SET value = '2'")
    started = time.monotonic()
    with pytest.raises(StorageBusy, match="locked by another writer"):
        store.put("k", "3", ROOMY)
    # The 200 ms busy timeout, not a wait for the holder, which commits only after this.
    assert 0.15 < time.monotonic() - started < 30
    assert store.get("k") == "1"  # WAL: the reader sees the last commit, without waiting
    assert store.keys("", 0, 10).keys == ["k"]
    holder.execute("COMMIT")
    holder.close()
    store.put("k", "3", ROOMY)
    assert store.get("k") == "3"
    store.close()


def test_a_writer_waits_for_a_short_lock(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    store = SQLiteStorage(path)
    store.put("k", "1", ROOMY)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    release.start()
    store.put("k", "2", ROOMY)
    release.join()
    holder.close()
    assert store.get("k") == "2"
    store.close()


def test_a_file_that_is_not_a_database_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    path.write_bytes(b"this is not a database, just some bytes" * 100)
    store = SQLiteStorage(path)
    with pytest.raises(StorageUnavailable, match="SQLITE_NOTADB"):
        store.get("k")
    with pytest.raises(StorageUnavailable):
        store.put("k", "1", ROOMY)
    assert path.read_bytes().startswith(b"this is not a database")


def test_a_missing_directory_is_unavailable(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "missing" / "kv.db")
    with pytest.raises(StorageUnavailable, match="SQLITE_CANTOPEN"):
        store.usage()
    assert not (tmp_path / "missing").exists()


def test_a_closed_storage_refuses_work(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "kv.db")
    store.put("k", "1", ROOMY)
    store.close()
    with pytest.raises(StorageUnavailable, match="closed"):
        store.get("k")


def first_writes_together(path: Path, count: int) -> list[BaseException]:
    """``count`` storages of a new file each make their first write at the same moment."""
    stores = [SQLiteStorage(path, "ns") for _ in range(count)]
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def first_write(store: SQLiteStorage, n: int) -> None:
        try:
            start.wait()
            store.put(f"k{n}", encode_value(n), ROOMY)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_write, args=(s, n)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if not errors:
        assert stores[0].keys("", 0, 100).keys == [f"k{n}" for n in range(count)]
    for store in stores:
        store.close()
    return errors


def test_a_new_file_opened_by_many_storages_at_once_initialises_without_busy_errors(
    tmp_path: Path,
) -> None:
    """Switching a new file to WAL can answer SQLITE_BUSY at once: the storage waits instead."""
    for round_ in range(20):
        assert first_writes_together(tmp_path / f"fresh-{round_}.db", 8) == []
