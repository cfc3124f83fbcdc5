"""``SQLiteStorage``: namespaces in one SQLite file, one row per key, safe across processes.

Touches only its database file (and SQLite's ``-wal`` and ``-shm`` files next to it). The file is
in WAL mode, so readers never wait for a writer; every write is one ``BEGIN IMMEDIATE``
transaction that takes the write lock first, reads the namespace's usage, checks the quota and the
approved value, and writes, so parallel activities in any number of worker processes serialise on
the lock and lose nothing. Waiting for that lock is bounded by SQLite's busy timeout. Keys and
values are bound as parameters, never spliced into SQL.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolcalls.activities.storage.store import (
    Expected,
    KeyPage,
    Quota,
    StorageBusy,
    StorageError,
    StorageUnavailable,
    Usage,
    Written,
    check_expected,
    check_quota,
)
from toolcalls.activities.storage.values import entry_bytes, store_bytes

WRITE_BUSY_TIMEOUT_MS = 10_000
"""How long a write waits for another writer's lock; the write tools run for at most 30 s."""
READ_BUSY_TIMEOUT_MS = 2_000
"""Readers wait only while SQLite recovers a crashed writer's WAL; the read tools run for 10 s."""
MAX_IDLE_CONNECTIONS = 8

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv (namespace TEXT NOT NULL, key TEXT NOT NULL, "
    "size INTEGER NOT NULL, value TEXT NOT NULL, UNIQUE (namespace, key))",
    "CREATE INDEX IF NOT EXISTS kv_size ON kv (namespace, size)",
)
"""``size`` is the entry's share of the namespace's JSON object (``entry_bytes``); the index on it
lets a write sum its namespace's usage without reading any value."""

_BUSY = {"SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_RECOVERY", "SQLITE_LOCKED"}
_UNAVAILABLE = {"SQLITE_CANTOPEN", "SQLITE_NOTADB", "SQLITE_READONLY", "SQLITE_PERM"}


class SQLiteStorage:
    """One namespace of a SQLite database file; several instances may share the file."""

    def __init__(
        self,
        path: str | Path,
        namespace: str = "tool-values",
        *,
        write_busy_timeout_ms: int = WRITE_BUSY_TIMEOUT_MS,
        read_busy_timeout_ms: int = READ_BUSY_TIMEOUT_MS,
    ) -> None:
        self._path = Path(path)
        self._namespace = namespace
        self._write_busy = int(write_busy_timeout_ms)
        self._read_busy = int(read_busy_timeout_ms)
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._ready = False
        self._closed = False

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def path(self) -> Path:
        return self._path

    def get(self, key: str) -> str | None:
        with self._connection(self._read_busy) as db:
            row = db.execute(
                "SELECT value FROM kv WHERE namespace = ? AND key = ?", (self._namespace, key)
            ).fetchone()
        return None if row is None else str(row[0])

    def keys(self, prefix: str, offset: int, limit: int) -> KeyPage:
        # Keys with a prefix are contiguous in code point order (SQLite's BINARY collation of
        # UTF-8), starting at the first key >= prefix. The prefix test is Python's startswith:
        # LIKE, GLOB and substr() treat wildcards, case or NUL specially.
        page: list[str] = []
        more = False
        seen = 0
        with self._connection(self._read_busy) as db:
            rows = db.execute(
                "SELECT key FROM kv WHERE namespace = ? AND key >= ? ORDER BY key",
                (self._namespace, prefix),
            )
            try:
                for (key,) in rows:
                    if not key.startswith(prefix):
                        break
                    if seen >= offset + limit:
                        more = True
                        break
                    if seen >= offset:
                        page.append(key)
                    seen += 1
            finally:
                # An unfinished statement would keep a read transaction open on the pooled
                # connection, and the next write on it could not begin.
                rows.close()
        return KeyPage(page, more=more)

    def usage(self) -> Usage:
        with self._connection(self._read_busy) as db:
            keys, entries = self._totals(db)
        return Usage(keys, store_bytes(keys, entries))

    def put(self, key: str, text: str, quota: Quota, expected: Expected | None = None) -> Written:
        with self._connection(self._write_busy) as db, _transaction(db):
            old = self._current(db, key)
            check_expected(expected, old)
            keys, entries = self._totals(db)
            after = check_quota(quota, Usage(keys, store_bytes(keys, entries)), key, old, text)
            db.execute(
                "INSERT INTO kv (namespace, key, size, value) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (namespace, key) DO UPDATE SET size = excluded.size, "
                "value = excluded.value",
                (self._namespace, key, entry_bytes(key, text), text),
            )
        return Written(created=old is None, usage=after)

    def delete(self, key: str, expected: Expected | None = None) -> bool:
        with self._connection(self._write_busy) as db, _transaction(db):
            old = self._current(db, key)
            check_expected(expected, old)
            if old is None:
                return False
            db.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (self._namespace, key))
        return True

    def close(self) -> None:
        """Close the idle connections; later calls fail with ``StorageUnavailable``."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db in idle:
            db.close()

    def _current(self, db: sqlite3.Connection, key: str) -> str | None:
        row = db.execute(
            "SELECT value FROM kv WHERE namespace = ? AND key = ?", (self._namespace, key)
        ).fetchone()
        return None if row is None else str(row[0])

    def _totals(self, db: sqlite3.Connection) -> tuple[int, int]:
        keys, entries = db.execute(
            "SELECT count(*), coalesce(sum(size), 0) FROM kv WHERE namespace = ?",
            (self._namespace,),
        ).fetchone()
        return int(keys), int(entries)

    @contextmanager
    def _connection(self, busy_timeout_ms: int) -> Iterator[sqlite3.Connection]:
        """A pooled connection with the given busy timeout; SQLite errors become ours."""
        db: sqlite3.Connection | None = None
        try:
            db = self._acquire()
            db.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
            yield db
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
                db = None
            raise _storage_error(exc) from exc
        finally:
            if db is not None:
                self._release(db)

    def _acquire(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise StorageUnavailable(f"{self._path}: storage is closed")
            if self._idle:
                return self._idle.pop()
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=0)
        try:
            if not self._ready:
                self._initialise_when_free(db)
        except BaseException:
            db.close()
            raise
        return db

    def _initialise_when_free(self, db: sqlite3.Connection) -> None:
        """``_initialise``, retried while other connections hold the file.

        Switching a new file to WAL and creating the table take locks for which SQLite may answer
        ``SQLITE_BUSY`` at once, without waiting in the busy handler (several workers, or several
        storages of one worker, opening a new file together), so they are retried here, up to the
        write busy timeout.
        """
        deadline = time.monotonic() + self._write_busy / 1000
        pause = 0.005
        while True:
            try:
                self._initialise(db)
                return
            except (sqlite3.OperationalError, StorageUnavailable) as exc:
                busy = isinstance(exc, _NotYetWal) or (
                    getattr(exc, "sqlite_errorname", "") in _BUSY
                )
                if not busy or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _initialise(self, db: sqlite3.Connection) -> None:
        db.execute(f"PRAGMA busy_timeout = {self._write_busy}")
        (mode,) = db.execute("PRAGMA journal_mode = WAL").fetchone()
        if str(mode).lower() != "wal":
            raise _NotYetWal(f"{self._path}: journal mode is {mode}, not wal")
        for statement in _SCHEMA:
            db.execute(statement)
        self._ready = True

    def _release(self, db: sqlite3.Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append(db)
                return
        db.close()


class _NotYetWal(StorageUnavailable):
    """The switch to WAL did not take (another connection held the file); worth retrying."""


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE``: take the write lock before reading what the write depends on."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.rollback()
        raise
    db.execute("COMMIT")


def _storage_error(exc: sqlite3.Error) -> StorageError:
    name = getattr(exc, "sqlite_errorname", "")
    if name in _BUSY:
        return StorageBusy(f"the database stayed locked by another writer ({name})")
    if name in _UNAVAILABLE:
        return StorageUnavailable(f"cannot use the database: {exc} ({name})")
    return StorageError(f"database error: {exc}" + (f" ({name})" if name else ""))
