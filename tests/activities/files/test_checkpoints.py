"""The checkpoint store on a real SQLite file: records, transitions, durability, one writer."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from toolcalls.activities.files.checkpoints import (
    TRANSITIONS,
    ChangeKind,
    ChangeRecord,
    ChangeState,
    CheckpointError,
    CheckpointStore,
)


def record(change_id: str = "chg-1", **changes: object) -> ChangeRecord:
    base = ChangeRecord(
        change_id=change_id,
        tool="replace_file",
        kind=ChangeKind.REPLACE,
        path="/w/a.txt",
        parent="1:2",
        state=ChangeState.PREPARED,
        preimage=b"\x00old bytes\xff",
        preimage_mode=0o644,
        preimage_sha256="aa" * 32,
        postimage_sha256="bb" * 32,
        postimage_mode=0o644,
        postimage_size=3,
        temp_name=".toolcalls-0123456789abcdef.tmp",
        workflow_id="wf",
        call_id="toolu_1",
        idempotency_key="wf:toolu_1",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CheckpointStore]:
    with CheckpointStore(tmp_path / "state" / "checkpoints.db") as store:
        yield store


def test_a_record_round_trips_with_its_bytes(store: CheckpointStore) -> None:
    saved = record()
    store.begin(saved)
    loaded = store.get("chg-1")
    assert loaded is not None
    assert loaded.preimage == b"\x00old bytes\xff"
    assert isinstance(loaded.preimage, bytes)
    assert (loaded.kind, loaded.state) == (ChangeKind.REPLACE, ChangeState.PREPARED)
    assert loaded.created_at == loaded.updated_at != ""
    assert replace(loaded, created_at="", updated_at="") == saved
    assert store.get("chg-none") is None


def test_a_created_file_has_no_preimage(store: CheckpointStore) -> None:
    store.begin(record(kind=ChangeKind.CREATE, preimage=None, preimage_mode=None))
    with pytest.raises(CheckpointError, match="CHECK constraint"):
        store.begin(record("chg-2", kind=ChangeKind.CREATE))
    with pytest.raises(CheckpointError, match="CHECK constraint"):
        store.begin(record("chg-3", preimage=None))


def test_a_change_id_is_saved_once(store: CheckpointStore) -> None:
    store.begin(record())
    with pytest.raises(CheckpointError, match="UNIQUE"):
        store.begin(record(postimage_sha256="cc" * 32))
    loaded = store.get("chg-1")
    assert loaded is not None
    assert loaded.postimage_sha256 == "bb" * 32


def test_records_start_prepared(store: CheckpointStore) -> None:
    with pytest.raises(ValueError, match="starts prepared"):
        store.begin(record(state=ChangeState.APPLIED))
    assert store.get("chg-1") is None


def test_the_lifecycle_of_a_restored_change(store: CheckpointStore) -> None:
    store.begin(record())
    store.transition("chg-1", ChangeState.PREPARED, ChangeState.APPLIED, temp_name=None)
    store.transition(
        "chg-1",
        ChangeState.APPLIED,
        ChangeState.RESTORING,
        temp_name=".toolcalls-fedcba9876543210.tmp",
        restore_key="wf:toolu_2",
    )
    assert [r.change_id for r in store.unfinished()] == ["chg-1"]
    store.transition(
        "chg-1", ChangeState.RESTORING, ChangeState.RESTORED, detail="done", temp_name=None
    )
    loaded = store.get("chg-1")
    assert loaded is not None
    assert (loaded.state, loaded.temp_name, loaded.restore_key, loaded.detail) == (
        ChangeState.RESTORED,
        None,
        "wf:toolu_2",
        "done",
    )
    assert loaded.updated_at > loaded.created_at
    assert store.unfinished() == []


@pytest.mark.parametrize("old", list(ChangeState))
@pytest.mark.parametrize("new", list(ChangeState))
def test_only_the_documented_transitions_exist(old: ChangeState, new: ChangeState) -> None:
    allowed = {
        (ChangeState.PREPARED, ChangeState.APPLIED),
        (ChangeState.PREPARED, ChangeState.FAILED),
        (ChangeState.PREPARED, ChangeState.UNCERTAIN),
        (ChangeState.APPLIED, ChangeState.RESTORING),
        (ChangeState.RESTORING, ChangeState.RESTORED),
        (ChangeState.RESTORING, ChangeState.APPLIED),
        (ChangeState.RESTORING, ChangeState.UNCERTAIN),
    }
    assert (new in TRANSITIONS.get(old, frozenset())) == ((old, new) in allowed)


def test_a_transition_needs_the_state_it_leaves(store: CheckpointStore) -> None:
    store.begin(record())
    store.transition("chg-1", ChangeState.PREPARED, ChangeState.APPLIED)
    # A second writer that still believes the record is prepared loses.
    with pytest.raises(CheckpointError, match="is applied, not prepared"):
        store.transition("chg-1", ChangeState.PREPARED, ChangeState.FAILED)
    with pytest.raises(ValueError, match="no transition from applied to restored"):
        store.transition("chg-1", ChangeState.APPLIED, ChangeState.RESTORED)
    with pytest.raises(CheckpointError, match="is missing"):
        store.transition("chg-none", ChangeState.PREPARED, ChangeState.FAILED)
    with pytest.raises(ValueError, match="cannot set path"):
        store.transition("chg-1", ChangeState.APPLIED, ChangeState.RESTORING, path="/x")
    loaded = store.get("chg-1")
    assert loaded is not None
    assert loaded.state is ChangeState.APPLIED


def test_unfinished_lists_prepared_and_restoring_oldest_first(store: CheckpointStore) -> None:
    for index, state in enumerate(
        (ChangeState.APPLIED, ChangeState.PREPARED, ChangeState.FAILED, ChangeState.PREPARED)
    ):
        change_id = f"chg-{index}"
        store.begin(record(change_id))
        if state is not ChangeState.PREPARED:
            store.transition(change_id, ChangeState.PREPARED, state)
    store.transition("chg-0", ChangeState.APPLIED, ChangeState.RESTORING)
    assert [r.change_id for r in store.unfinished()] == ["chg-0", "chg-1", "chg-3"]


def test_the_store_is_durable_private_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "checkpoints.db"
    with CheckpointStore(path) as store:
        store.begin(record())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        assert db.execute("SELECT state FROM changes").fetchall() == [("prepared",)]
    with CheckpointStore(path) as store:
        reopened = store.get("chg-1")
        assert reopened is not None
        assert reopened.state is ChangeState.PREPARED
        settings = store._db  # the connection's own settings
        assert settings is not None
        assert settings.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        assert settings.execute("PRAGMA busy_timeout").fetchone() == (5000,)


def test_an_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 7")
    with pytest.raises(CheckpointError, match="schema version 7"):
        CheckpointStore(path)
    # The failed open released the writer's lock: a second try fails the same way, not "in use".
    with pytest.raises(CheckpointError, match="schema version 7"):
        CheckpointStore(path)


def test_a_store_has_one_writer(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.db"
    first = CheckpointStore(path)
    with pytest.raises(CheckpointError, match="in use by another worker"):
        CheckpointStore(path)
    first.close()
    with CheckpointStore(path) as second:
        second.begin(record())


def test_a_closed_store_refuses_work(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoints.db")
    store.close()
    store.close()
    with pytest.raises(CheckpointError, match="closed"):
        store.get("chg-1")


def test_a_locked_database_fails_the_save_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.db"
    with CheckpointStore(path, busy_timeout=0.1) as store:
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(CheckpointError, match="locked"):
                store.begin(record())
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        store.begin(record())
        assert store.get("chg-1") is not None
