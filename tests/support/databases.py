"""Real SQLite files for the database tools' tests, and proof that the tools left them alone."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext
from toolcalls.activities.database import DatabaseTools
from toolcalls.activities.database.settings import DatabaseSettings
from toolcalls.activities.database.tools import (
    DatabaseSchemaArgs,
    DatabaseSchemaResult,
    QueryDatabaseArgs,
    QueryDatabaseResult,
)

CALL = CallContext("wf", "call", "wf:call", None, None)

SCHEMA = """
CREATE TABLE items (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT DEFAULT 'misc',
    price REAL,
    image BLOB
);
INSERT INTO items VALUES (1, 'apple', 'fruit', 1.5, X'89504E47');
INSERT INTO items VALUES (2, 'bread', 'bakery', 3.25, NULL);
INSERT INTO items VALUES (3, 'cheese', 'dairy', 12.0, X'');
INSERT INTO items VALUES (4, 'dates', 'fruit', 8.75, NULL);
CREATE TABLE pairs (a INTEGER NOT NULL, b TEXT, PRIMARY KEY (b, a));
CREATE VIEW fruit AS SELECT id, name FROM items WHERE category = 'fruit';
CREATE TABLE numbers (n INTEGER);
CREATE INDEX numbers_n ON numbers (n);
"""
NUMBERS = 10_000
"""Rows of ``numbers``: two copies joined make the 1e8-row cartesian product of the cases."""


def make_database(path: Path, script: str = SCHEMA, numbers: int = NUMBERS) -> Path:
    """A rollback-journal SQLite file at ``path`` with the test schema; closed when returned."""
    connection = sqlite3.connect(path)
    try:
        connection.executescript(script)
        if numbers:
            connection.executemany("INSERT INTO numbers VALUES (?)", ((n,) for n in range(numbers)))
        connection.commit()
    finally:
        connection.close()
    return path


def snapshot(directory: Path) -> dict[str, str]:
    """sha256 of every file in ``directory``: a journal or copy appearing shows up too."""
    return {
        entry.name: hashlib.sha256(entry.read_bytes()).hexdigest()
        for entry in sorted(directory.iterdir())
        if entry.is_file() and not entry.is_symlink()
    }


def tools_for(path: Path, **settings: Any) -> DatabaseTools:
    return DatabaseTools(DatabaseSettings(path=path, **settings))


async def query(
    tools: DatabaseTools,
    sql: str,
    parameters: Any = None,
    max_rows: int | None = None,
    env: ActivityEnvironment | None = None,
) -> QueryDatabaseResult:
    """``query_database`` in a real activity context (its heartbeat needs one)."""
    args = QueryDatabaseArgs(sql=sql, parameters=parameters, max_rows=max_rows)
    result: QueryDatabaseResult = await (env or ActivityEnvironment()).run(
        tools.query_database, args, CALL
    )
    return result


async def schema(tools: DatabaseTools) -> DatabaseSchemaResult:
    result: DatabaseSchemaResult = await ActivityEnvironment().run(
        tools.database_schema, DatabaseSchemaArgs(), CALL
    )
    return result


async def failure(tools: DatabaseTools, sql: str, parameters: Any = None) -> ApplicationError:
    """The tool error ``query_database`` ends with."""
    try:
        await query(tools, sql, parameters)
    except ApplicationError as exc:
        return exc
    raise AssertionError(f"{sql!r} succeeded")
