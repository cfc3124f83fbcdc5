"""The checkpoint store: a recovery record for every file change, saved before the change.

One SQLite file (WAL, ``synchronous=FULL``, a busy timeout) holds a row per change: the path, what
kind of change it is (``create`` or ``replace``), the bytes and mode the file had before (none for
a created file), the digest and mode it should have after, the temporary file the change writes
through, the workflow and call that asked for it, and its state::

    prepared ──► applied ──► restoring ──► restored
       │                         │
       ├──► failed               ├──► applied   (the restore certainly did not touch the file)
       └──► uncertain            └──► uncertain

A record is ``prepared`` before anything on disk changes and is moved on only by the operation
that owns it, each transition conditional on the state it leaves, so two writers can never both
move one record. ``failed`` means the change certainly did not happen; ``uncertain`` that it may
have. Records are never replayed or rolled back automatically.

The store has one live writer: the worker holds an exclusive lock on ``<store>.lock`` for as long
as the store is open, so a second worker configured with the same file fails at start instead of
mistaking the first one's changes in flight for interrupted ones. Every method blocks (SQLite, the
lock): call them from a thread, never on the event loop.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any

SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds an operation waits for another connection's lock before it fails."""


class ChangeState(StrEnum):
    """Where a change is; see the module docstring for the transitions."""

    PREPARED = "prepared"
    APPLIED = "applied"
    RESTORING = "restoring"
    RESTORED = "restored"
    FAILED = "failed"
    UNCERTAIN = "uncertain"


class ChangeKind(StrEnum):
    CREATE = "create"
    """The file did not exist; restoring removes it."""
    REPLACE = "replace"
    """The file existed; restoring writes its saved bytes and mode back."""


TRANSITIONS: dict[ChangeState, frozenset[ChangeState]] = {
    ChangeState.PREPARED: frozenset(
        {ChangeState.APPLIED, ChangeState.FAILED, ChangeState.UNCERTAIN}
    ),
    ChangeState.APPLIED: frozenset({ChangeState.RESTORING}),
    ChangeState.RESTORING: frozenset(
        {ChangeState.RESTORED, ChangeState.APPLIED, ChangeState.UNCERTAIN}
    ),
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    change_id TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('create', 'replace')),
    path TEXT NOT NULL,
    parent TEXT NOT NULL,
    state TEXT NOT NULL,
    preimage BLOB,
    preimage_mode INTEGER,
    preimage_sha256 TEXT,
    postimage_sha256 TEXT NOT NULL,
    postimage_mode INTEGER NOT NULL,
    postimage_size INTEGER NOT NULL,
    temp_name TEXT,
    workflow_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    restore_key TEXT,
    detail TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    CHECK ((kind = 'create') = (preimage IS NULL))
);
CREATE INDEX IF NOT EXISTS changes_unfinished ON changes (state)
    WHERE state IN ('prepared', 'restoring');
"""


class CheckpointError(RuntimeError):
    """The store could not do what was asked; the message says what and why."""


@dataclass(frozen=True)
class ChangeRecord:
    """One change as the store holds it."""

    change_id: str
    tool: str
    kind: ChangeKind
    path: str
    parent: str
    """``"<st_dev>:<st_ino>"`` of the directory the change was made in."""
    state: ChangeState
    preimage: bytes | None
    preimage_mode: int | None
    preimage_sha256: str | None
    postimage_sha256: str
    postimage_mode: int
    postimage_size: int
    temp_name: str | None
    """The temporary file the operation in flight writes through, in the same directory."""
    workflow_id: str
    call_id: str
    idempotency_key: str
    restore_key: str | None = None
    """Idempotency key of the ``restore_change`` call that took the record to ``restoring``."""
    detail: str | None = None
    """Why the record is ``failed``, ``uncertain`` or back to ``applied``."""
    created_at: str = ""
    updated_at: str = ""


_COLUMNS = tuple(ChangeRecord.__dataclass_fields__)


class CheckpointStore:
    """Recovery records in one SQLite file, with one live writer (this object)."""

    def __init__(self, path: Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # The store holds the lossless original bytes of every file changed: owner-only, like
        # any application data, and created so before SQLite first opens it.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        self._lock_fd = os.open(
            path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise CheckpointError(
                f"checkpoint store {path} is in use by another worker; a store has one writer"
            ) from None
        self._mutex = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            db = self._db = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            # A record must be on disk before the change it describes: FULL syncs every commit.
            db.execute("PRAGMA synchronous = FULL")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise CheckpointError(
                    f"checkpoint store {path} has schema version {version}; "
                    f"this worker understands {SCHEMA_VERSION}"
                )
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            self.close()
            raise CheckpointError(f"checkpoint store {path}: {exc}") from exc
        except CheckpointError:
            self.close()
            raise

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A worker's store lives as long as the worker; one dropped unclosed (a test's worker,
        # say) must not keep the writer's lock, or its file descriptor, forever.
        if getattr(self, "_lock_fd", -1) >= 0:
            self.close()

    def close(self) -> None:
        """Close the database and release the writer's lock."""
        if getattr(self, "_db", None) is not None:
            assert self._db is not None
            self._db.close()
            self._db = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[list[Any], int]:
        """The rows and the row count of one statement, under the connection's mutex."""
        with self._mutex:
            if self._db is None:
                raise CheckpointError("the checkpoint store is closed")
            try:
                cursor = self._db.execute(sql, params)
                return cursor.fetchall(), cursor.rowcount
            except sqlite3.Error as exc:
                raise CheckpointError(f"checkpoint store: {exc}") from exc

    def begin(self, record: ChangeRecord) -> None:
        """Save a new record in state ``prepared``; nothing may change on disk before this.

        Raises:
            CheckpointError: the record was not saved (a record with this id exists, say).
        """
        if record.state is not ChangeState.PREPARED:
            raise ValueError("a new record starts prepared")
        now = _now()
        values = {**record.__dict__, "created_at": now, "updated_at": now}
        placeholders = ", ".join("?" for _ in _COLUMNS)
        self._run(
            f"INSERT INTO changes ({', '.join(_COLUMNS)}) VALUES ({placeholders})",
            tuple(_sql(values[column]) for column in _COLUMNS),
        )

    def transition(
        self,
        change_id: str,
        old: ChangeState,
        new: ChangeState,
        *,
        detail: str | None = None,
        **fields: Any,
    ) -> None:
        """Move a record from ``old`` to ``new`` (and set ``fields``), if it is still ``old``.

        Raises:
            CheckpointError: the transition is not allowed, the record is not in ``old``, or the
                store failed.
        """
        if new not in TRANSITIONS.get(old, frozenset()):
            raise ValueError(f"no transition from {old} to {new}")
        unknown = set(fields) - {"temp_name", "restore_key"}
        if unknown:
            raise ValueError(f"cannot set {', '.join(sorted(unknown))}")
        sets = {"state": new.value, "detail": detail, "updated_at": _now(), **fields}
        _, count = self._run(
            f"UPDATE changes SET {', '.join(f'{key} = ?' for key in sets)} "
            "WHERE change_id = ? AND state = ?",
            (*sets.values(), change_id, old.value),
        )
        if count != 1:
            current = self.get(change_id)
            found = current.state.value if current else "missing"
            raise CheckpointError(f"change {change_id} is {found}, not {old.value}")

    def get(self, change_id: str) -> ChangeRecord | None:
        rows, _ = self._run(
            f"SELECT {', '.join(_COLUMNS)} FROM changes WHERE change_id = ?", (change_id,)
        )
        return _record(rows[0]) if rows else None

    def unfinished(self) -> list[ChangeRecord]:
        """Records left ``prepared`` or ``restoring``, oldest first."""
        rows, _ = self._run(
            f"SELECT {', '.join(_COLUMNS)} FROM changes "
            "WHERE state IN ('prepared', 'restoring') ORDER BY created_at"
        )
        return [_record(row) for row in rows]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _sql(value: Any) -> Any:
    if isinstance(value, StrEnum):
        return value.value
    return value


def _record(row: tuple[Any, ...]) -> ChangeRecord:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["kind"] = ChangeKind(values["kind"])
    values["state"] = ChangeState(values["state"])
    return ChangeRecord(**values)
