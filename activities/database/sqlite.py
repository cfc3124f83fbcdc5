"""``SQLiteDatabase``: read-only SQL over one existing SQLite file.

What it can touch: the one file the deployment configured, read-only, and nothing else. Every call
opens a fresh connection in a worker thread and closes it there; the confinement is SQLite's own,
in layers, so that no single mistake opens a way to write:

- the file must exist and be a regular file, not a symlink (checked before and after the open,
  by device and inode); it is opened through a ``file:`` URI (path percent-encoded, so ``?`` and
  ``#`` in a name stay part of it) with ``mode=ro``, which never creates a file;
- ``PRAGMA query_only`` is set before any SQL of the caller's runs, extension loading stays
  disabled, and ``ATTACH`` is limited to zero databases;
- an authorizer allows only reading (``SELECT``, column reads, recursive CTEs) and functions not
  on a deny-list; every write, ``ATTACH``/``DETACH``, ``PRAGMA``, transaction, savepoint, DDL and
  extension loading is refused when the statement is compiled, before it runs;
- runtime limits: any string or blob is at most ``max_result_bytes`` (so ``zeroblob(2e9)`` fails
  before it is allocated), SQL text, result columns and expression depth are bounded;
- a progress handler stops the statement at its deadline or when the call is canceled (the event
  loop also calls ``interrupt()`` on cancellation);
- the built-in functions whose one call is quadratic in its arguments (``like``, ``glob``,
  ``trim``, ``instr``, ``replace``: see ``GUARDED_FUNCTIONS``) check the deadline and their cost
  before each call, since SQLite never runs the progress handler inside a function;
- rows are fetched in batches and counted against ``max_rows`` and the JSON byte budget as they
  arrive, so a ten-million-row result is never materialised.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from activities.database.backend import (
    DatabaseBusy,
    DatabaseError,
    DatabaseUnavailable,
    Parameters,
    QueryRejected,
    QueryTimedOut,
    ValueTooLarge,
)
from activities.database.settings import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_TABLES,
    DEFAULT_TIMEOUT_SECONDS,
)

PROGRESS_OPS = 1_000
"""Virtual-machine instructions between two checks of the deadline: microseconds apart."""
FETCH_BATCH = 64
"""Rows fetched at a time; the caps are checked after every row."""
BUSY_TIMEOUT_SECONDS = 2.0
"""How long an open waits for a writer's lock; readers of a WAL database never wait."""
MAX_SQL_BYTES = 400_000
"""``SQLITE_LIMIT_SQL_LENGTH``: the ``sql`` argument is at most 100,000 characters of UTF-8."""
MAX_RESULT_COLUMNS = 1_000
"""``SQLITE_LIMIT_COLUMN`` once the schema is loaded: a row is at most this many values."""
MAX_EXPR_DEPTH = 200
"""``SQLITE_LIMIT_EXPR_DEPTH`` (SQLite's default is 1,000): deep expressions cost stack."""
MAX_VARIABLES = 1_000
"""``SQLITE_LIMIT_VARIABLE_NUMBER``: the tool accepts at most 1,000 parameters."""

DENIED_FUNCTIONS = frozenset(
    {
        # Loads native code (also off at the connection level).
        "load_extension",
        # With two arguments registers a tokenizer from a pointer (SQLITE_ENABLE_FTS3_TOKENIZER).
        "fts3_tokenizer",
        # File access from the sqlite3 shell's extensions, if a build ever carries them.
        "readfile",
        "writefile",
        "edit",
        "fsdir",
    }
)
"""SQL functions refused by the authorizer; every other built-in function is allowed."""

SCAN_STEPS = 100_000_000
"""Character steps one call of a pattern or trim function may take (``like``, ``glob``,
``trim``/``ltrim``/``rtrim`` with a character set): about 0.1-0.3 s."""
COMPARE_BYTES = 10_000_000_000
"""Byte comparisons one call of ``instr`` or ``replace`` may take (``memcmp``): about 0.1 s."""
GUARDED_FUNCTIONS = (
    ("like", 2, SCAN_STEPS),
    ("like", 3, SCAN_STEPS),
    ("glob", 2, SCAN_STEPS),
    ("trim", 2, SCAN_STEPS),
    ("ltrim", 2, SCAN_STEPS),
    ("rtrim", 2, SCAN_STEPS),
    ("instr", 2, COMPARE_BYTES),
    ("replace", 3, COMPARE_BYTES),
)
"""Built-in functions whose one call costs the product of its first two arguments' lengths.
SQLite calls the progress handler only between instructions, never inside a function, so one
``trim(x, y)`` of two 1 MiB strings would run for most of an hour past the deadline (and many in
one row for longer). Each is replaced by a wrapper that checks the deadline and the cost before
it calls SQLite's own function (on a private in-memory connection, so the result is the same)."""

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
_SCHEMA_PRAGMAS = frozenset({"table_xinfo"})
"""The only pragma ``describe_schema`` runs (a query can run none)."""
_ACTION_NAMES = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_").lower().replace("_", " ")
    for name in dir(sqlite3)
    if name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_", "SQLITE_ALTER_"))
    or name
    in {
        "SQLITE_INSERT",
        "SQLITE_UPDATE",
        "SQLITE_DELETE",
        "SQLITE_PRAGMA",
        "SQLITE_TRANSACTION",
        "SQLITE_ATTACH",
        "SQLITE_DETACH",
        "SQLITE_REINDEX",
        "SQLITE_ANALYZE",
        "SQLITE_SAVEPOINT",
        "SQLITE_COPY",
    }
}
_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_UNAVAILABLE = frozenset(
    {sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY}
)

_T = TypeVar("_T")


@dataclass
class _Run:
    """One call's connection, deadline and what its authorizer refused; shared with the loop."""

    timeout: float
    deadline: float = 0.0
    connection: sqlite3.Connection | None = None
    canceled: bool = False
    denied: str | None = None
    failure: DatabaseError | None = None
    """Why a guarded function stopped the statement."""
    helper: sqlite3.Connection | None = None
    """Where the guarded functions run SQLite's own implementation."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def cancel(self) -> None:
        """Called from the event loop: stop the statement the thread is running."""
        with self.lock:
            self.canceled = True
            if self.connection is not None:
                self.connection.interrupt()

    def stop(self) -> int:
        """The progress handler: non-zero interrupts the statement."""
        return int(self.canceled or time.monotonic() > self.deadline)


class SQLiteDatabase:
    """One existing SQLite file, read through fresh read-only connections (see the module)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        max_tables: int = DEFAULT_MAX_TABLES,
    ) -> None:
        text = os.fspath(path)
        if text in ("", ":memory:") or text.startswith("file:"):
            raise ValueError("in-memory and URI databases are not supported; give a file path")
        self.path = Path(text)
        if not self.path.is_absolute():
            raise ValueError(f"{self.path} is not an absolute path")
        if timeout_seconds <= 0 or max_result_bytes <= 0 or max_tables <= 0:
            raise ValueError("timeout_seconds, max_result_bytes and max_tables must be positive")
        self.timeout_seconds = timeout_seconds
        self.max_result_bytes = max_result_bytes
        self.max_tables = max_tables
        # Path.as_uri percent-encodes, so "?", "#" and "%" in the path cannot add URI parameters.
        self._uri = f"{self.path.as_uri()}?mode=ro"

    async def describe_schema(self) -> dict[str, Any]:
        """Tables and views of the main database, by name, with their columns."""
        return await self._run(self._schema)

    async def query(self, *, sql: str, parameters: Parameters, max_rows: int) -> dict[str, Any]:
        """Run one read-only statement; rows stop at ``max_rows`` or the byte budget."""
        if max_rows < 1:
            raise QueryRejected("max_rows must be at least 1", "max_rows")
        bound = _bound(parameters)
        return await self._run(lambda conn, run: self._query(conn, run, sql, bound, max_rows))

    async def _run(self, work: Callable[[sqlite3.Connection, _Run], _T]) -> _T:
        """``work`` on a fresh connection in a thread; cancellation interrupts it and waits."""
        run = _Run(timeout=self.timeout_seconds)
        task = asyncio.ensure_future(asyncio.to_thread(self._in_connection, run, work))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            run.cancel()
            # The connection is closed in its thread; wait until it is, a few VM steps away.
            while not task.done():
                try:
                    await asyncio.wait({task})
                except asyncio.CancelledError:
                    continue
            if not task.cancelled():
                task.exception()
            raise

    def _in_connection(self, run: _Run, work: Callable[[sqlite3.Connection, _Run], _T]) -> _T:
        run.deadline = time.monotonic() + run.timeout
        connection = self._connect(run)
        try:
            with run.lock:
                run.connection = connection
            return work(connection, run)
        except sqlite3.Error as exc:
            raise self._mapped(exc, run) from None
        finally:
            with run.lock:
                run.connection = None
            _close(connection, run)

    def _connect(self, run: _Run) -> sqlite3.Connection:
        before = _regular_file(self.path)
        try:
            connection = sqlite3.connect(
                self._uri,
                uri=True,
                timeout=min(BUSY_TIMEOUT_SECONDS, run.timeout),
                isolation_level=None,  # never an implicit BEGIN
                check_same_thread=False,  # interrupt() comes from the event loop's thread
                cached_statements=0,
            )
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"{self.path}: cannot open: {exc}") from None
        try:
            if _regular_file(self.path) != before:
                raise DatabaseUnavailable(f"{self.path} was replaced while it was opened")
            connection.text_factory = _text
            if hasattr(connection, "enable_load_extension"):  # absent when Python's build omits it
                connection.enable_load_extension(False)
            connection.execute("PRAGMA query_only = ON")
            # Load the schema before the column limit is lowered: a table wider than the limit is
            # legal and must not make the whole schema unreadable. A non-database fails here.
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            for limit, value in (
                (sqlite3.SQLITE_LIMIT_LENGTH, self.max_result_bytes),
                (sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES),
                (sqlite3.SQLITE_LIMIT_COLUMN, MAX_RESULT_COLUMNS),
                (sqlite3.SQLITE_LIMIT_EXPR_DEPTH, MAX_EXPR_DEPTH),
                (sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, MAX_VARIABLES),
                (sqlite3.SQLITE_LIMIT_ATTACHED, 0),
            ):
                connection.setlimit(limit, value)
            connection.set_progress_handler(run.stop, PROGRESS_OPS)
            self._guard_functions(connection, run)
        except sqlite3.Error as exc:
            _close(connection, run)
            raise self._mapped(exc, run) from None
        except BaseException:
            _close(connection, run)
            raise
        return connection

    def _query(
        self,
        connection: sqlite3.Connection,
        run: _Run,
        sql: str,
        parameters: Any,
        max_rows: int,
    ) -> dict[str, Any]:
        connection.set_authorizer(_authorizer(run, frozenset()))
        cursor = connection.execute(sql, parameters)
        if cursor.description is None:
            raise QueryRejected("no statement that returns rows")
        columns = [str(column[0]) for column in cursor.description]
        # "false" is the longer spelling, so this is an upper bound of the empty result.
        size = _json_bytes({"columns": columns, "rows": [], "truncated": False})
        if size > self.max_result_bytes:
            raise ValueTooLarge(
                f"the column names alone are over the {self.max_result_bytes}-byte result limit"
            )
        rows: list[list[Any]] = []
        truncated = False
        while not truncated:
            batch = cursor.fetchmany(min(FETCH_BATCH, max_rows + 1 - len(rows)))
            if not batch:
                break
            for raw in batch:
                if len(rows) == max_rows:
                    truncated = True
                    break
                row = [_value(value) for value in raw]
                cost = _json_bytes(row) + (1 if rows else 0)
                if size + cost > self.max_result_bytes:
                    truncated = True
                    break
                rows.append(row)
                size += cost
            if time.monotonic() > run.deadline:
                raise QueryTimedOut(self._too_slow())
        cursor.close()
        return {"columns": columns, "rows": rows, "truncated": truncated}

    def _schema(self, connection: sqlite3.Connection, run: _Run) -> dict[str, Any]:
        connection.set_authorizer(_authorizer(run, _SCHEMA_PRAGMAS))
        objects = connection.execute(
            "SELECT name, type FROM main.sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT ?",
            (self.max_tables + 1,),
        ).fetchall()
        truncated = len(objects) > self.max_tables
        size = _json_bytes({"tables": [], "truncated": False})
        tables: list[dict[str, Any]] = []
        for name, kind in objects[: self.max_tables]:
            table = {"name": name, "type": kind, "columns": [], "error": None}
            try:
                table["columns"] = _columns(connection, name)
            except sqlite3.OperationalError as exc:
                # A view over a missing table (or one calling a refused function) cannot be
                # described; say so for that view and go on. A deadline still ends the call.
                if run.canceled or _code(exc) == sqlite3.SQLITE_INTERRUPT:
                    raise
                table["error"] = str(exc)
                run.denied = None
            cost = _json_bytes(table) + (1 if tables else 0)
            if size + cost > self.max_result_bytes:
                truncated = True
                break
            tables.append(table)
            size += cost
        return {"tables": tables, "truncated": truncated}

    def _guard_functions(self, connection: sqlite3.Connection, run: _Run) -> None:
        """Replace the functions whose one call is not bounded by the progress handler."""
        helper = sqlite3.connect(":memory:", check_same_thread=False, cached_statements=16)
        run.helper = helper
        helper.text_factory = _text
        helper.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.max_result_bytes)
        for name, arguments, bound in GUARDED_FUNCTIONS:
            connection.create_function(
                name,
                arguments,
                self._guarded(run, helper, name, arguments, bound),
                deterministic=True,
            )

    def _guarded(
        self, run: _Run, helper: sqlite3.Connection, name: str, arguments: int, bound: int
    ) -> Callable[..., Any]:
        sql = f"SELECT {name}({', '.join('?' * arguments)})"

        def call(*args: Any) -> Any:
            if run.stop():
                run.failure = QueryTimedOut(self._too_slow())
                raise sqlite3.OperationalError("interrupted")
            first, second = _length(args[0]), _length(args[1])
            if first * second > bound:
                run.failure = QueryRejected(
                    f"{name}() of arguments of {first} and {second} characters would run too "
                    "long; use shorter values or patterns"
                )
                raise sqlite3.OperationalError("too expensive")
            try:
                return helper.execute(sql, args).fetchone()[0]
            except sqlite3.Error as exc:
                run.failure = self._mapped(exc, _Run(timeout=run.timeout))
                raise

        return call

    def _too_slow(self) -> str:
        return f"stopped at the {self.timeout_seconds:g} s deadline; narrow the query"

    def _mapped(self, exc: sqlite3.Error, run: _Run) -> DatabaseError:
        """The one place SQLite's errors become backend errors."""
        code = _code(exc)
        message = str(exc)
        if run.canceled:
            return DatabaseError("canceled")
        if run.failure is not None:
            return run.failure
        if code == sqlite3.SQLITE_INTERRUPT:
            return QueryTimedOut(self._too_slow())
        if run.denied is not None:
            return QueryRejected(f"not authorized: {run.denied}; only reads are allowed")
        if code == sqlite3.SQLITE_TOOBIG:
            return ValueTooLarge(
                f"a value is larger than the {self.max_result_bytes}-byte result limit ({message})"
            )
        if code in _BUSY:
            return DatabaseBusy("the database stayed locked by a writer")
        if code in _UNAVAILABLE:
            return DatabaseUnavailable(f"{self.path}: {message}")
        if isinstance(exc, sqlite3.ProgrammingError):
            # Raised by Python's sqlite3 before SQLite runs anything: several statements, a NUL,
            # or parameters that do not match the placeholders.
            argument = "parameters" if "binding" in message.lower() else "sql"
            return QueryRejected(message[:1].lower() + message[1:].rstrip("."), argument)
        if code in (sqlite3.SQLITE_ERROR, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH):
            argument = "parameters" if code == sqlite3.SQLITE_RANGE else "sql"
            return QueryRejected(message, argument)
        return DatabaseError(message)


def _authorizer(run: _Run, pragmas: frozenset[str]) -> Callable[..., int]:
    def authorize(
        action: int, arg1: str | None, arg2: str | None, database: str | None, source: str | None
    ) -> int:
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            if (arg2 or "").lower() not in DENIED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            what = f"function {arg2}()"
        elif action == sqlite3.SQLITE_PRAGMA and arg1 in pragmas and database in (None, "main"):
            return sqlite3.SQLITE_OK
        else:
            what = _ACTION_NAMES.get(action, f"action {action}")
            if arg1:
                what = f"{what} {arg1}"
        if run.denied is None:
            run.denied = what
        return sqlite3.SQLITE_DENY

    return authorize


def _columns(connection: sqlite3.Connection, name: str) -> list[dict[str, Any]]:
    quoted = '"' + name.replace('"', '""') + '"'
    return [
        {
            "name": column,
            "type": declared,
            "not_null": bool(not_null),
            "default": default,
            "primary_key": primary_key,
        }
        for _cid, column, declared, not_null, default, primary_key, hidden in connection.execute(
            f"PRAGMA main.table_xinfo({quoted})"
        )
        if hidden != 1  # a virtual table's hidden columns; generated columns (2, 3) are real
    ]


def _close(connection: sqlite3.Connection, run: _Run) -> None:
    connection.close()
    if run.helper is not None:
        run.helper.close()


def _regular_file(path: Path) -> tuple[int, int]:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise DatabaseUnavailable(f"{path} does not exist") from None
    except OSError as exc:
        raise DatabaseUnavailable(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise DatabaseUnavailable(f"{path} is a symlink; configure the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise DatabaseUnavailable(f"{path} is not a regular file")
    return info.st_dev, info.st_ino


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _text(data: bytes) -> str:
    """TEXT as Python strings; invalid UTF-8 in a stored value becomes U+FFFD, not a failure."""
    return data.decode("utf-8", "replace")


def _value(value: Any) -> Any:
    """One SQLite value as JSON: blobs as ``{"base64": ...}``, non-finite reals tagged."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    return value


def _length(value: Any) -> int:
    """Characters (or bytes) SQLite works through for one function argument."""
    if value is None:
        return 0
    if isinstance(value, str | bytes):
        return len(value)
    return len(str(value))


def _json_bytes(value: Any) -> int:
    """Compact UTF-8 JSON size; ``repr`` of a float is never shorter than the result's JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _bound(parameters: Parameters) -> list[Any] | dict[str, Any]:
    """Parameters as ``sqlite3`` binds them: a list positionally, a mapping by name."""
    if isinstance(parameters, Mapping):
        return dict(parameters)
    return list(parameters or ())
