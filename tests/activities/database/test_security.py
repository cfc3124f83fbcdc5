"""SECURITY-CASES "database (SQLite read-only)": every case, against a real SQLite file.

The ``database`` fixture checks after each test that every file in the database's directory is
byte-for-byte what it was: no write, no journal, no copy, no attached file.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.support.databases import (
    failure,
    make_database,
    query,
    snapshot,
    tools_for,
)
from toolcalls.activities.database.tools import QueryDatabaseArgs
from toolcalls.workflows.models.call import ErrorCode

WRITES = [
    "DELETE FROM items",
    "INSERT INTO items (name) VALUES ('x')",
    "REPLACE INTO items (id, name) VALUES (1, 'x')",
    "UPDATE items SET name = 'x'",
    "DROP TABLE items",
    "DROP VIEW fruit",
    "DROP INDEX numbers_n",
    "CREATE TABLE other (a)",
    "CREATE TEMP TABLE scratch (a)",
    "CREATE INDEX items_name ON items (name)",
    "CREATE VIEW v AS SELECT 1",
    "CREATE TRIGGER t AFTER INSERT ON items BEGIN SELECT 1; END",
    "CREATE VIRTUAL TABLE docs USING fts5(body)",
    "ALTER TABLE items ADD COLUMN extra",
    "ALTER TABLE items RENAME TO goods",
    "WITH doomed AS (SELECT id FROM items) DELETE FROM items WHERE id IN doomed",
    "WITH new(n) AS (VALUES ('x')) INSERT INTO items (name) SELECT n FROM new",
    "INSERT INTO items (name) SELECT name FROM items RETURNING id",
    "ANALYZE",
    "VACUUM",
]


@pytest.mark.parametrize("sql", WRITES)
async def test_every_kind_of_write_is_not_authorized(database: Path, sql: str) -> None:
    error = await failure(tools_for(database), sql)
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.details[0]["fixable_args"] == ["sql"]
    assert error.message.startswith("query_database: sql: not authorized: ")
    assert error.message.endswith("; only reads are allowed")


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("BEGIN", "transaction BEGIN"),
        ("BEGIN IMMEDIATE", "transaction BEGIN"),
        ("COMMIT", "transaction COMMIT"),
        ("ROLLBACK", "transaction ROLLBACK"),
        ("SAVEPOINT s", "savepoint BEGIN"),
        ("RELEASE s", "savepoint RELEASE"),
        ("DETACH main", "detach main"),
    ],
)
async def test_transactions_and_detach_are_not_authorized(
    database: Path, sql: str, refused: str
) -> None:
    error = await failure(tools_for(database), sql)
    assert (
        error.message == f"query_database: sql: not authorized: {refused}; only reads are allowed"
    )


async def test_attach_of_any_file_is_denied(database: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()
    tools = tools_for(database)
    for target in ("/etc/passwd", str(other), ":memory:", "file:x?mode=memory"):
        error = await failure(tools, f"ATTACH DATABASE '{target}' AS x")
        assert error.message == (
            f"query_database: sql: not authorized: attach {target}; only reads are allowed"
        )
    # The ATTACHED limit is zero too: even a value bound as the file name is refused.
    error = await failure(tools, "ATTACH ? AS x", [str(other)])
    assert "not authorized: attach" in error.message
    # VACUUM INTO would write a copy next to the database (the fixture sees any new file).
    error = await failure(tools, f"VACUUM INTO '{database.parent / 'copy.db'}'")
    assert "not authorized: attach" in error.message
    assert other.stat().st_size == 0


@pytest.mark.parametrize(
    "sql",
    [
        "PRAGMA writable_schema=1",
        "PRAGMA journal_mode=OFF",
        "PRAGMA query_only=0",
        "PRAGMA main.user_version=7",
        "PRAGMA table_info(items)",
        "SELECT * FROM pragma_table_info('items')",
        "SELECT * FROM pragma_database_list",
    ],
)
async def test_pragmas_are_denied_even_the_read_only_ones(database: Path, sql: str) -> None:
    error = await failure(tools_for(database), sql)
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert "not authorized" in error.message


@pytest.mark.parametrize(
    ("sql", "function"),
    [
        ("SELECT load_extension('/tmp/x.so')", "load_extension"),
        ("SELECT load_extension('/tmp/x.so', 'entry')", "load_extension"),
        ("SELECT LOAD_EXTENSION('libc.so.6')", "load_extension"),
        ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
        ("SELECT * FROM items WHERE load_extension(name) IS NULL", "load_extension"),
    ],
)
async def test_extension_loading_is_denied(database: Path, sql: str, function: str) -> None:
    error = await failure(tools_for(database), sql)
    assert error.message == (
        f"query_database: sql: not authorized: function {function}(); only reads are allowed"
    )


async def test_a_recursive_cte_counting_forever_is_interrupted_by_the_deadline(
    database: Path,
) -> None:
    tools = tools_for(database, timeout_seconds=0.5)
    started = time.monotonic()
    error = await failure(
        tools,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
    )
    elapsed = time.monotonic() - started
    assert error.type == ErrorCode.TIMED_OUT
    assert error.message == "query_database: stopped at the 0.5 s deadline; narrow the query"
    assert error.details[0]["fixable_args"] == ["sql"]
    assert 0.5 <= elapsed < 30  # the deadline, not the never-ending recursion, ended it


async def test_a_cartesian_join_of_two_large_tables_is_interrupted_by_the_deadline(
    database: Path,
) -> None:
    tools = tools_for(database, timeout_seconds=0.3)
    error = await failure(tools, "SELECT sum(a.n * b.n) FROM numbers AS a, numbers AS b")
    assert error.type == ErrorCode.TIMED_OUT  # run to its end, the join would give a sum


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT zeroblob(2000000000)",
        "SELECT randomblob(2e9)",
        "SELECT length(zeroblob(2000000000))",
        "SELECT replace(hex(zeroblob(600000)), '0', 'ab')",
    ],
)
async def test_giant_values_are_refused_before_they_are_made(database: Path, sql: str) -> None:
    error = await failure(tools_for(database), sql)
    assert error.type == ErrorCode.OUTPUT_TOO_LARGE
    assert error.message == (
        "query_database: a value is larger than the 1048576-byte result limit "
        "(string or blob too big)"
    )


async def test_a_stored_value_over_the_limit_is_refused_before_transfer(tmp_path: Path) -> None:
    path = make_blob_database(tmp_path / "blobs.db", 5_000)
    tools = tools_for(path, max_result_bytes=4_096)
    error = await failure(tools, "SELECT data FROM blobs")
    assert error.type == ErrorCode.OUTPUT_TOO_LARGE
    assert "larger than the 4096-byte result limit" in error.message
    # Its size can still be asked for: length() does not load the value.
    assert (await query(tools, "SELECT length(data) FROM blobs")).rows == [[5_000]]


@pytest.mark.parametrize(
    "sql",
    ["SELECT 1; DROP TABLE items", "SELECT 1; SELECT 2", "SELECT 1;\nDELETE FROM items;"],
)
async def test_one_statement_at_a_time(database: Path, sql: str) -> None:
    error = await failure(tools_for(database), sql)
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.message == "query_database: sql: you can only execute one statement at a time"
    assert (await query(tools_for(database), "SELECT count(*) FROM items")).rows == [[4]]


def test_no_argument_names_a_database() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        QueryDatabaseArgs.model_validate({"sql": "SELECT 1", "db": "../../other.db"})


async def test_the_uri_escapes_question_marks_and_hashes_in_the_path(tmp_path: Path) -> None:
    """A file named like URI parameters is opened as that file, read-only, and nothing else."""
    weird = make_database(tmp_path / "a.db?mode=rwc&vfs=unix#frag", numbers=0)
    plain = tmp_path / "a.db"
    before = snapshot(tmp_path)
    tools = tools_for(weird)
    assert (await query(tools, "SELECT count(*) FROM items")).rows == [[4]]
    assert "not authorized" in (await failure(tools, "DELETE FROM items")).message
    assert not plain.exists()
    assert snapshot(tmp_path) == before


async def test_a_ten_million_row_result_stops_at_the_row_cap(database: Path) -> None:
    result = await query(
        tools_for(database),
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000) "
        "SELECT x, 'row ' || x FROM c",
        max_rows=1_000,
    )
    assert result.truncated
    assert len(result.rows) == 1_000
    assert result.rows[-1] == [1_000, "row 1000"]


async def test_a_huge_result_stops_at_the_byte_cap(database: Path) -> None:
    result = await query(
        tools_for(database),
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT x, printf('%.5000c', 'y') FROM c",
        max_rows=1_000,
    )
    assert result.truncated
    assert 150 < len(result.rows) < 1_000
    size = len(result.model_dump_json())
    assert 1_048_576 - 5_100 < size <= 1_048_576


async def test_a_read_through_a_view_is_fine(database: Path) -> None:
    result = await query(tools_for(database), "SELECT name FROM fruit ORDER BY id")
    assert result.rows == [["apple"], ["dates"]]
    assert not result.truncated


@pytest.mark.parametrize("sql", ["REINDEX", "REINDEX numbers", "REINDEX numbers_n"])
async def test_reindex_is_not_authorized(database: Path, sql: str) -> None:
    """A bare REINDEX names no object, but SQLite asks about every index it would rebuild."""
    error = await failure(tools_for(database), sql)
    assert error.message == (
        "query_database: sql: not authorized: reindex numbers_n; only reads are allowed"
    )


def make_blob_database(path: Path, size: int) -> Path:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE blobs (data BLOB)")
    connection.execute("INSERT INTO blobs VALUES (randomblob(?))", (size,))
    connection.commit()
    connection.close()
    return path
