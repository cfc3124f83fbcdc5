"""The query process: one read-only call against one SQLite file, in a process of its own.

``SQLiteDatabase`` runs this file as a script (``python -I reader.py``) for every call, writes one
JSON request to its standard input and reads one JSON object from its standard output: the
result (``{"columns", "rows", "truncated"}`` or ``{"tables", "truncated"}``) or
``{"error", "message", "argument"}``. It imports only the standard library.

Why a process: SQLite runs its progress handler between virtual-machine instructions, never
inside a function, and some built-ins work for seconds to hours in one call: ``printf('%.*c',
2000000000, 'x')`` pads for about 12 s, ``like``, ``glob``, ``trim``, ``instr`` and ``replace``
are quadratic in their arguments' lengths, and thousands of calls fit in one row. No thread can
be stopped there; a process can. The worker kills this one shortly after the deadline and when
the call is canceled, and it confines itself before it opens the file (``confine``).

What it can touch: the one file the request names, read-only. The confinement is SQLite's own,
in layers, so that no single mistake opens a way to write, or to run what the file asks for:

- the file must exist and be a regular file, not a symlink (checked before and after the open,
  by device and inode); it is opened through a ``file:`` URI (path percent-encoded, so ``?`` and
  ``#`` in a name stay part of it) with ``mode=ro``, which never creates a file;
- ``PRAGMA trusted_schema = OFF`` (read back; unless the deployment trusts the file) before
  the schema is read: the file's views, triggers, generated columns and index expressions may
  call only functions SQLite marks innocuous and use only virtual tables it marks so;
  ``PRAGMA query_only`` is on, extension loading off, ``ATTACH`` limited to zero databases;
- an authorizer allows only reading (``SELECT``, column reads, recursive CTEs) and the built-in
  functions in ``ALLOWED_FUNCTIONS``; every write, ``ATTACH``/``DETACH``, ``PRAGMA``,
  transaction, savepoint, DDL and any other function is refused when the statement is compiled;
- runtime limits: any string or blob is at most ``max_result_bytes`` (so ``zeroblob(2e9)`` fails
  before it is allocated), SQL text, result columns and expression depth are bounded;
- a progress handler stops the statement at its deadline;
- rows are fetched in batches and counted against ``max_rows`` and the JSON byte budget as they
  arrive, so a ten-million-row result is never materialised.
"""

from __future__ import annotations

import binascii
import json
import math
import os
import resource
import sqlite3
import stat
import sys
import time
import urllib.parse

# Every import costs every call its start-up time: pathlib, base64 and typing are left out, and
# typing's names are for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

PROGRESS_OPS = 1_000
"""Virtual-machine instructions between two checks of the deadline: microseconds apart."""
FETCH_BATCH = 64
"""Rows fetched at a time; the caps are checked after every row."""
MAX_SQL_BYTES = 400_000
"""``SQLITE_LIMIT_SQL_LENGTH``: the ``sql`` argument is at most 100,000 characters of UTF-8."""
MAX_RESULT_COLUMNS = 1_000
"""``SQLITE_LIMIT_COLUMN`` once the schema is loaded: a row is at most this many values."""
MAX_EXPR_DEPTH = 200
"""``SQLITE_LIMIT_EXPR_DEPTH`` (SQLite's default is 1,000): deep expressions cost stack."""
MAX_VARIABLES = 1_000
"""``SQLITE_LIMIT_VARIABLE_NUMBER``: the tool accepts at most 1,000 parameters."""

ALLOWED_FUNCTIONS = frozenset(
    {
        # Core scalar functions (those of newer SQLite versions too).
        *("abs", "changes", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex"),
        *("if", "ifnull", "iif", "instr", "last_insert_rowid", "length", "like", "likelihood"),
        *("likely", "lower", "ltrim", "max", "min", "nullif", "octet_length", "printf", "quote"),
        *("random", "randomblob", "replace", "round", "rtrim", "sign", "soundex"),
        *("sqlite_compileoption_get", "sqlite_compileoption_used", "sqlite_source_id"),
        *("sqlite_version", "substr", "substring", "total_changes", "trim", "typeof", "unhex"),
        *("unicode", "unistr", "unistr_quote", "unlikely", "upper", "zeroblob"),
        # Aggregates and window functions.
        *("avg", "count", "group_concat", "string_agg", "sum", "total", "median", "percentile"),
        *("percentile_cont", "percentile_disc", "row_number", "rank", "dense_rank"),
        *("percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value"),
        "nth_value",
        # Date and time.
        *("date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"),
        *("current_date", "current_time", "current_timestamp"),
        # Mathematics.
        *("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos"),
        *("cosh", "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow"),
        *("power", "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"),
        # JSON, the operators included (the jsonb forms of newer versions too).
        *("json", "json_array", "json_array_length", "json_error_position", "json_extract"),
        *("json_group_array", "json_group_object", "json_insert", "json_object", "json_patch"),
        *("json_pretty", "json_quote", "json_remove", "json_replace", "json_set", "json_type"),
        *("json_valid", "jsonb", "jsonb_array", "jsonb_extract", "jsonb_group_array"),
        *("jsonb_group_object", "jsonb_insert", "jsonb_object", "jsonb_patch", "jsonb_remove"),
        *("jsonb_replace", "jsonb_set", "->", "->>"),
    }
)
"""SQL functions the authorizer allows, by name; every other function is refused when the
statement is compiled. SQLite's innocuous built-ins and its JSON functions, which only read their
arguments (SQLite 3.40 does not mark the JSON ones innocuous, so an untrusted schema cannot call
them). Left out, among others: ``load_extension``, ``fts3_tokenizer`` (registers a tokenizer from
a pointer), ``fts5`` (returns a pointer), the full-text functions (``match``, ``snippet``,
``highlight``...: the authorizer already refuses what the full-text modules do when a table of
theirs is opened) and FTS4's ``optimize`` (writes), the R*Tree debugging functions, ``sqlite_log``
(writes to the error log), ``subtype`` (a test function) and whatever an extension adds."""

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
_UNSAFE = "unsafe use of "
"""How SQLite's error about a schema object calling what an untrusted schema may not begins."""


class Failure(Exception):
    """A call's failure as the worker reads it: ``kind`` (``rejected``, ``timed_out``,
    ``too_large``, ``busy``, ``unavailable``, ``memory``, ``failed``) and a short message."""

    def __init__(self, kind: str, message: str = "", argument: str = "sql") -> None:
        super().__init__(message)
        self.record = {"error": kind, "message": message, "argument": argument}


class Call:
    """One request: its file, caps and deadline, and what the authorizer refused."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.path: str = request["path"]
        self.deadline = float(request["deadline"])
        self.busy_timeout = float(request["busy_timeout"])
        self.max_result_bytes = int(request["max_result_bytes"])
        self.max_tables = int(request["max_tables"])
        self.trusted_schema = bool(request["trusted_schema"])
        self.denied: str | None = None

    def stop(self) -> int:
        """The progress handler: non-zero interrupts the statement."""
        return int(time.monotonic() > self.deadline)


def run(request: dict[str, Any]) -> dict[str, Any]:
    """The result, or the failure record, of one request; never raises for a bad query."""
    call = Call(request)
    try:
        connection = connect(call)
        try:
            if request["op"] == "schema":
                return describe(connection, call)
            return query(
                connection, call, request["sql"], request["parameters"], int(request["max_rows"])
            )
        finally:
            connection.close()
    except Failure as exc:
        return exc.record
    except sqlite3.Error as exc:
        return mapped(exc, call).record
    except MemoryError:
        return Failure("memory").record


def connect(call: Call) -> sqlite3.Connection:
    """A read-only connection to the call's file, confined as the module says."""
    before = _regular_file(call.path)
    try:
        connection = sqlite3.connect(
            # Percent-encoded as Path.as_uri() does, so "?", "#" and "%" stay part of the name.
            f"file://{urllib.parse.quote_from_bytes(os.fsencode(call.path))}?mode=ro",
            uri=True,
            timeout=max(0.0, min(call.busy_timeout, call.deadline - time.monotonic())),
            isolation_level=None,  # never an implicit BEGIN
            cached_statements=0,
        )
    except sqlite3.Error as exc:
        raise Failure("unavailable", f"{call.path}: cannot open: {exc}") from None
    try:
        if _regular_file(call.path) != before:
            raise Failure("unavailable", f"{call.path} was replaced while it was opened")
        connection.text_factory = _text
        if hasattr(connection, "enable_load_extension"):  # absent when Python's build omits it
            connection.enable_load_extension(False)
        # Our own pragmas, before the authorizer that refuses every pragma of a query. The
        # authorizer is not asked about a generated column's or an index's functions: only an
        # untrusted schema keeps those to innocuous ones. The read-back catches a SQLite too
        # old to know trusted_schema (before 3.31), which ignores the pragma.
        trusted = int(call.trusted_schema)
        connection.execute(f"PRAGMA trusted_schema = {trusted}")
        if connection.execute("PRAGMA trusted_schema").fetchone() != (trusted,):
            raise Failure(
                "unavailable",
                f"SQLite {sqlite3.sqlite_version} has no trusted_schema setting (3.31 or newer)",
            )
        connection.execute("PRAGMA query_only = ON")
        # Load the schema before the column limit is lowered: a table wider than the limit is
        # legal and must not make the whole schema unreadable. A non-database fails here.
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        for limit, value in (
            (sqlite3.SQLITE_LIMIT_LENGTH, call.max_result_bytes),
            (sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES),
            (sqlite3.SQLITE_LIMIT_COLUMN, MAX_RESULT_COLUMNS),
            (sqlite3.SQLITE_LIMIT_EXPR_DEPTH, MAX_EXPR_DEPTH),
            (sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, MAX_VARIABLES),
            (sqlite3.SQLITE_LIMIT_ATTACHED, 0),
        ):
            connection.setlimit(limit, value)
        connection.set_progress_handler(call.stop, PROGRESS_OPS)
    except BaseException:
        connection.close()
        raise
    return connection


def query(
    connection: sqlite3.Connection, call: Call, sql: str, parameters: Any, max_rows: int
) -> dict[str, Any]:
    """Rows of one statement, stopped at ``max_rows`` or the byte budget."""
    connection.set_authorizer(authorizer(call, frozenset()))
    cursor = connection.execute(sql, parameters)
    if cursor.description is None:
        raise Failure("rejected", "no statement that returns rows")
    columns = [str(column[0]) for column in cursor.description]
    # "false" is the longer spelling, so this is an upper bound of the empty result.
    size = _json_bytes({"columns": columns, "rows": [], "truncated": False})
    if size > call.max_result_bytes:
        raise Failure(
            "too_large",
            f"the column names alone are over the {call.max_result_bytes}-byte result limit",
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
            if size + cost > call.max_result_bytes:
                truncated = True
                break
            rows.append(row)
            size += cost
        if call.stop():
            raise Failure("timed_out")
    cursor.close()
    return {"columns": columns, "rows": rows, "truncated": truncated}


def describe(connection: sqlite3.Connection, call: Call) -> dict[str, Any]:
    """Tables and views of the main database with their columns, within the caps."""
    connection.set_authorizer(authorizer(call, _SCHEMA_PRAGMAS))
    objects = connection.execute(
        "SELECT name, type FROM main.sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT ?",
        (call.max_tables + 1,),
    ).fetchall()
    truncated = len(objects) > call.max_tables
    size = _json_bytes({"tables": [], "truncated": False})
    tables: list[dict[str, Any]] = []
    for name, kind in objects[: call.max_tables]:
        table = {"name": name, "type": kind, "columns": [], "error": None}
        try:
            table["columns"] = _columns(connection, name)
        except sqlite3.OperationalError as exc:
            # A view over a missing table (or one calling a refused function) cannot be
            # described; say so for that view and go on. A deadline still ends the call.
            if _code(exc) == sqlite3.SQLITE_INTERRUPT:
                raise
            table["error"] = str(exc)
            call.denied = None
        cost = _json_bytes(table) + (1 if tables else 0)
        if size + cost > call.max_result_bytes:
            truncated = True
            break
        tables.append(table)
        size += cost
    return {"tables": tables, "truncated": truncated}


def authorizer(call: Call, pragmas: frozenset[str]) -> Callable[..., int]:
    """Reads, the allowed functions and ``pragmas`` on the main database; nothing else."""

    def authorize(
        action: int, arg1: str | None, arg2: str | None, database: str | None, source: str | None
    ) -> int:
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            if (arg2 or "").lower() in ALLOWED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            what = f"function {arg2}()"
        elif action == sqlite3.SQLITE_PRAGMA and arg1 in pragmas and database in (None, "main"):
            return sqlite3.SQLITE_OK
        else:
            what = _ACTION_NAMES.get(action, f"action {action}")
            if arg1:
                what = f"{what} {arg1}"
        if call.denied is None:
            call.denied = what
        return sqlite3.SQLITE_DENY

    return authorize


def mapped(exc: sqlite3.Error, call: Call) -> Failure:
    """The one place SQLite's errors become failure records."""
    code = _code(exc)
    message = str(exc)
    if code == sqlite3.SQLITE_INTERRUPT:
        return Failure("timed_out")
    if call.denied is not None:
        return Failure("rejected", f"not authorized: {call.denied}; only reads are allowed")
    if _UNSAFE in message:
        if code == sqlite3.SQLITE_CORRUPT:
            # A generated column or an index calls it: SQLite then reads no table of the file.
            return Failure(
                "unavailable",
                f"{call.path}: {message}; SQLite reads such a schema only when it is trusted "
                "(database.trusted_schema)",
            )
        return Failure(
            "rejected",
            f"{message}: a view of this database calls what SQLite runs only from a trusted "
            "schema; query the tables it reads instead",
        )
    if code == sqlite3.SQLITE_TOOBIG:
        return Failure(
            "too_large",
            f"a value is larger than the {call.max_result_bytes}-byte result limit ({message})",
        )
    if code == sqlite3.SQLITE_NOMEM:
        return Failure("memory")
    if code in _BUSY:
        return Failure("busy", "the database stayed locked by a writer")
    if code in _UNAVAILABLE:
        return Failure("unavailable", f"{call.path}: {message}")
    if isinstance(exc, sqlite3.ProgrammingError):
        # Raised by Python's sqlite3 before SQLite runs anything: several statements, a NUL,
        # or parameters that do not match the placeholders.
        argument = "parameters" if "binding" in message.lower() else "sql"
        return Failure("rejected", message[:1].lower() + message[1:].rstrip("."), argument)
    if code in (sqlite3.SQLITE_ERROR, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH):
        return Failure("rejected", message, "parameters" if code == sqlite3.SQLITE_RANGE else "sql")
    return Failure("failed", message)


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


def _regular_file(path: str) -> tuple[int, int]:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise Failure("unavailable", f"{path} does not exist") from None
    except OSError as exc:
        raise Failure("unavailable", f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise Failure("unavailable", f"{path} is a symlink; configure the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise Failure("unavailable", f"{path} is not a regular file")
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
        return {"base64": binascii.b2a_base64(value, newline=False).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    return value


def _json_bytes(value: Any) -> int:
    """Compact UTF-8 JSON size; ``repr`` of a float is never shorter than the result's JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def confine(memory_bytes: int, cpu_seconds: int) -> None:
    """Limit this process before it opens the file: its address space (SQLite's and Python's
    allocations fail cleanly past it), its CPU time (should the worker be gone and not kill
    it), no core dumps."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    confine(int(request["memory_bytes"]), int(request["cpu_seconds"]))
    payload = run(request)
    answer = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    sys.stdout.buffer.write(answer.encode("utf-8"))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
