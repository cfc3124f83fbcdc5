"""``query_database`` and ``database_schema`` results over a real SQLite file: shapes, parameters,
caps, the schema, and what happens when the configured file goes away or changes kind."""

from __future__ import annotations

import base64
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.support.databases import (
    failure,
    make_database,
    query,
    schema,
    tools_for,
)
from toolcalls.activities.database import DatabaseTools, SQLiteDatabase
from toolcalls.activities.database.backend import Parameters
from toolcalls.activities.database.settings import DatabaseSettings
from toolcalls.activities.database.tools import QueryDatabaseArgs
from toolcalls.workflows.models.call import ErrorCode


async def test_columns_rows_and_blobs(database: Path) -> None:
    result = await query(tools_for(database), "SELECT id, name, image FROM items ORDER BY id")
    assert result.columns == ["id", "name", "image"]
    assert result.rows == [
        [1, "apple", {"base64": "iVBORw=="}],
        [2, "bread", None],
        [3, "cheese", {"base64": ""}],
        [4, "dates", None],
    ]
    assert not result.truncated


async def test_duplicate_column_names_are_kept_in_order(database: Path) -> None:
    result = await query(
        tools_for(database),
        "SELECT a.name, b.name, a.id AS id, b.id AS id FROM items a JOIN items b "
        "ON b.id = a.id + 1 ORDER BY a.id LIMIT 1",
    )
    assert result.columns == ["name", "name", "id", "id"]
    assert result.rows == [["apple", "bread", 1, 2]]


async def test_sqlite_values_become_json(database: Path) -> None:
    result = await query(
        tools_for(database),
        "SELECT 1.5, 9223372036854775807, 'naïve ✓', NULL, 1e999, -1e999, CAST(X'6869FF' AS TEXT)",
    )
    assert result.rows == [
        [
            1.5,
            9223372036854775807,
            "naïve ✓",
            None,
            {"float": "Infinity"},
            {"float": "-Infinity"},
            "hi\ufffd",
        ]
    ]


async def test_positional_and_named_parameters_are_bound(database: Path) -> None:
    tools = tools_for(database)
    positional = await query(
        tools, "SELECT name FROM items WHERE category = ? AND price < ? ORDER BY id", ["fruit", 5]
    )
    assert positional.rows == [["apple"]]
    named = await query(
        tools,
        "SELECT name FROM items WHERE category = :category AND price > :min ORDER BY id",
        {"category": "fruit", "min": 5.0},
    )
    assert named.rows == [["dates"]]
    pairs = await query(
        tools,
        "SELECT name FROM items WHERE category = :category AND price > :min ORDER BY id",
        [{"name": "category", "value": "fruit"}, {"name": "min", "value": 5.0}],
    )
    assert pairs.rows == [["dates"]]
    echoed = await query(tools, "SELECT ?, ?, ?, ?, typeof(?)", [True, None, "x'; DROP", 2.5, 7])
    assert echoed.rows == [[1, None, "x'; DROP", 2.5, "integer"]]


@pytest.mark.parametrize(
    ("sql", "parameters", "message"),
    [
        ("SELECT ?", [], "incorrect number of bindings supplied"),
        ("SELECT ?", [1, 2], "incorrect number of bindings supplied"),
        ("SELECT :a", {"b": 1}, "you did not supply a value for binding parameter :a"),
        ("SELECT ?", {"a": 1}, "binding 1 has no name, but you supplied a dictionary"),
    ],
)
async def test_parameters_that_do_not_match_the_placeholders(
    database: Path, sql: str, parameters: Parameters, message: str
) -> None:
    error = await failure(tools_for(database), sql, parameters)
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.details[0]["fixable_args"] == ["parameters"]
    assert error.message.startswith(f"query_database: parameters: {message}")


@pytest.mark.parametrize(
    "arguments",
    [
        {"sql": "SELECT ?", "parameters": [float("nan")]},
        {"sql": "SELECT ?", "parameters": [float("inf")]},
        {"sql": "SELECT ?", "parameters": [2**63]},
        {"sql": "SELECT ?", "parameters": [[1]]},
        {"sql": "SELECT ?", "parameters": [{"a": 1}]},
        {"sql": "SELECT :a", "parameters": {":a": 1}},
        {"sql": "SELECT :a", "parameters": {"a b": 1}},
        {"sql": "SELECT ?", "parameters": "1"},
        {"sql": "SELECT :a", "parameters": [{"name": "a"}]},
        {"sql": "SELECT :a", "parameters": [{"name": "a", "value": 1, "extra": 2}]},
        {"sql": "SELECT :a", "parameters": [{"name": "a", "value": 1}, {"name": "a", "value": 2}]},
        {"sql": "SELECT :a, ?", "parameters": [{"name": "a", "value": 1}, 2]},
        {"sql": "SELECT :a", "parameters": [{"name": 1, "value": 1}]},
        {"sql": "SELECT 1", "max_rows": 0},
        {"sql": "SELECT 1", "max_rows": 1_001},
        {"sql": "   "},
        {"sql": "SELECT 1\x00"},
        {"sql": "SELECT '" + "x" * 100_000 + "'"},
    ],
)
def test_invalid_arguments_are_refused_at_plan(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        QueryDatabaseArgs.model_validate(arguments)


def test_null_means_the_default() -> None:
    args = QueryDatabaseArgs.model_validate(
        {"sql": "SELECT 1", "parameters": None, "max_rows": None}
    )
    assert (args.parameters, args.max_rows) == (None, 100)


async def test_the_row_cap_and_an_empty_result(database: Path) -> None:
    tools = tools_for(database)
    capped = await query(tools, "SELECT n FROM numbers ORDER BY n", max_rows=3)
    assert (capped.rows, capped.truncated) == ([[0], [1], [2]], True)
    exact = await query(tools, "SELECT id FROM items ORDER BY id", max_rows=4)
    assert (len(exact.rows), exact.truncated) == (4, False)
    empty = await query(tools, "SELECT id, name FROM items WHERE id < 0")
    assert (empty.columns, empty.rows, empty.truncated) == (["id", "name"], [], False)


async def test_a_first_row_over_the_byte_cap_gives_an_empty_truncated_result(
    database: Path,
) -> None:
    tools = tools_for(database, max_result_bytes=2_048)
    result = await query(tools, "SELECT 1, zeroblob(1500), 2")
    assert (result.columns, result.rows, result.truncated) == (
        ["1", "zeroblob(1500)", "2"],
        [],
        True,
    )
    fits = await query(tools, "SELECT zeroblob(1000)")
    assert fits.rows == [[{"base64": base64.b64encode(bytes(1_000)).decode()}]]
    assert len(fits.model_dump_json()) <= 2_048


async def test_statements_other_than_queries(database: Path) -> None:
    tools = tools_for(database)
    explained = await query(tools, "EXPLAIN QUERY PLAN SELECT * FROM items WHERE id = 1")
    assert explained.columns == ["id", "parent", "notused", "detail"]
    values = await query(tools, "VALUES (1, 'a'), (2, 'b')")
    assert values.rows == [[1, "a"], [2, "b"]]
    nothing = await failure(tools, "-- just a comment")
    assert nothing.message == "query_database: sql: no statement that returns rows"
    syntax = await failure(tools, "SELEC 1")
    assert syntax.type == ErrorCode.INVALID_ARGUMENTS
    assert syntax.message == 'query_database: sql: near "SELEC": syntax error'
    missing = await failure(tools, "SELECT * FROM nowhere")
    assert missing.message == "query_database: sql: no such table: nowhere"


async def test_the_schema_lists_tables_and_views_with_their_columns(database: Path) -> None:
    result = await schema(tools_for(database))
    assert not result.truncated
    assert [(t.name, t.type) for t in result.tables] == [
        ("fruit", "view"),
        ("items", "table"),
        ("numbers", "table"),
        ("pairs", "table"),
    ]
    items = result.tables[1]
    assert [c.model_dump() for c in items.columns] == [
        {"name": "id", "type": "INTEGER", "not_null": False, "default": None, "primary_key": 1},
        {"name": "name", "type": "TEXT", "not_null": True, "default": None, "primary_key": 0},
        {
            "name": "category",
            "type": "TEXT",
            "not_null": False,
            "default": "'misc'",
            "primary_key": 0,
        },
        {"name": "price", "type": "REAL", "not_null": False, "default": None, "primary_key": 0},
        {"name": "image", "type": "BLOB", "not_null": False, "default": None, "primary_key": 0},
    ]
    pairs = result.tables[3]
    assert [(c.name, c.not_null, c.primary_key) for c in pairs.columns] == [
        ("a", True, 2),
        ("b", False, 1),
    ]
    assert [c.name for c in result.tables[0].columns] == ["id", "name"]


async def test_the_schema_stops_at_max_tables_and_reports_broken_views(tmp_path: Path) -> None:
    script = "".join(f"CREATE TABLE t{i:02} (a);" for i in range(12))
    script += 'CREATE VIEW "a ""quoted"" view" AS SELECT * FROM gone;'
    path = make_database(tmp_path / "many.db", script, numbers=0)
    result = await schema(tools_for(path, max_tables=5))
    assert result.truncated
    assert [t.name for t in result.tables] == ['a "quoted" view', "t00", "t01", "t02", "t03"]
    assert result.tables[0].columns == []
    assert result.tables[0].error == "no such table: main.gone"
    everything = await schema(tools_for(path))
    assert (len(everything.tables), everything.truncated) == (13, False)


async def test_the_schema_stops_at_the_byte_cap(tmp_path: Path) -> None:
    wide = ", ".join(f"column_with_a_long_name_{i} TEXT" for i in range(20))
    script = "".join(f"CREATE TABLE t{i} ({wide});" for i in range(10))
    path = make_database(tmp_path / "wide.db", script, numbers=0)
    result = await schema(tools_for(path, max_result_bytes=4_096))
    everything = await schema(tools_for(path))
    kept = len(result.tables)
    assert result.truncated
    # A prefix of the tables, as many as fit: one more would pass the cap.
    assert kept > 0
    assert result.tables == everything.tables[:kept]
    one_more = result.model_copy(update={"tables": everything.tables[: kept + 1]})
    assert len(result.model_dump_json()) <= 4_096 < len(one_more.model_dump_json())


async def test_a_table_wider_than_the_result_column_limit_stays_readable(tmp_path: Path) -> None:
    columns = ", ".join(f"c{i}" for i in range(1_500))
    path = make_database(tmp_path / "wide.db", f"CREATE TABLE w ({columns});", numbers=0)
    tools = tools_for(path)
    assert len((await schema(tools)).tables[0].columns) == 1_500
    assert (await query(tools, "SELECT c1499 FROM w")).columns == ["c1499"]
    error = await failure(tools, "SELECT * FROM w")
    assert error.message == "query_database: sql: too many columns in result set"


async def test_a_missing_file_is_a_configuration_error_and_is_never_created(
    tmp_path: Path,
) -> None:
    path = tmp_path / "absent.db"
    error = await failure(tools_for(path), "SELECT 1")
    assert error.type == ErrorCode.CONFIGURATION_ERROR
    assert error.message == f"query_database: {path} does not exist"
    assert os.listdir(tmp_path) == []


async def test_a_file_replaced_by_a_symlink_is_refused(database: Path, tmp_path: Path) -> None:
    tools = tools_for(database)
    assert (await query(tools, "SELECT count(*) FROM items")).rows == [[4]]
    other = make_database(tmp_path / "other.db", numbers=0)
    moved = database.with_name("moved.db")
    os.rename(database, moved)
    os.symlink(other, database)
    try:
        error = await failure(tools, "SELECT count(*) FROM items")
        assert error.type == ErrorCode.CONFIGURATION_ERROR
        assert (
            error.message == f"query_database: {database} is a symlink; configure the file itself"
        )
    finally:
        os.unlink(database)
        os.rename(moved, database)


async def test_files_that_are_not_databases(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    error = await failure(tools_for(garbage), "SELECT 1")
    assert error.type == ErrorCode.CONFIGURATION_ERROR
    assert error.message == f"query_database: {garbage}: file is not a database"
    assert garbage.read_bytes() == b"not a database at all" * 100
    directory = tmp_path / "dir.db"
    directory.mkdir()
    error = await failure(tools_for(directory), "SELECT 1")
    assert error.message == f"query_database: {directory} is not a regular file"


async def test_a_wal_database_is_read_with_its_uncheckpointed_writes(tmp_path: Path) -> None:
    path = make_database(tmp_path / "wal.db", numbers=0)
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO items (name) VALUES ('eggs')")
    writer.commit()
    try:
        main_file = path.read_bytes()
        result = await query(tools_for(path), "SELECT name FROM items WHERE id = 5")
        assert result.rows == [["eggs"]]
        assert path.read_bytes() == main_file
    finally:
        writer.close()


def test_only_an_existing_file_path_is_accepted() -> None:
    for bad in (":memory:", "", "file::memory:?cache=shared"):
        with pytest.raises(ValueError, match="in-memory and URI databases are not supported"):
            SQLiteDatabase(bad)
    with pytest.raises(ValueError, match=r"relative\.db is not an absolute path"):
        SQLiteDatabase("relative.db")
    with pytest.raises(ValueError, match="no database configured"):
        DatabaseTools(DatabaseSettings())


async def test_an_application_backend_is_bounded_by_the_tools(tmp_path: Path) -> None:
    """A ``DatabaseBackend`` of the application's own: the tools still cap rows and bytes."""

    class Generous:
        async def describe_schema(self) -> dict[str, Any]:
            return {
                "tables": [{"name": f"t{i}", "type": "table", "columns": []} for i in range(9)],
                "truncated": False,
            }

        async def query(self, *, sql: str, parameters: Parameters, max_rows: int) -> dict[str, Any]:
            return {"columns": ["x"], "rows": [["y" * 100] for _ in range(50)], "truncated": False}

    tools = DatabaseTools(DatabaseSettings(max_result_bytes=1_024, max_tables=4), Generous())
    result = await query(tools, "SELECT anything", max_rows=20)
    assert result.truncated
    # As many of the rows as fit: one more would pass the cap.
    kept = len(result.rows)
    assert kept > 0
    assert result.rows == [["y" * 100]] * kept
    one_more = result.model_copy(update={"rows": [*result.rows, ["y" * 100]]})
    assert len(result.model_dump_json()) <= 1_024 < len(one_more.model_dump_json())
    described = await schema(tools)
    assert ([t.name for t in described.tables], described.truncated) == (
        ["t0", "t1", "t2", "t3"],
        True,
    )


def test_the_settings_bound_the_limits() -> None:
    for bad in (
        {"timeout_seconds": 0},
        {"timeout_seconds": 26},
        {"max_result_bytes": 2**27},  # more than any deployment's result limit
        {"max_tables": 0},
    ):
        with pytest.raises(ValidationError):
            DatabaseSettings.model_validate(bad)
    assert os.fspath(DatabaseSettings(path=Path("/x.db")).path or "") == "/x.db"
