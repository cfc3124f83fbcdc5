"""What a query may call and how long one call may hold the worker, against real SQLite files:
functions by an allowlist, a schema SQLite does not trust, and work inside one function call
(where no progress handler runs) ended by killing the query process at the deadline."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tests.support.children import children
from tests.support.databases import failure, make_database, query, schema, tools_for
from toolcalls.activities.database.reader import ALLOWED_FUNCTIONS
from toolcalls.workflows.models.call import ErrorCode

UNTRUSTED = """
CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT, meta TEXT);
INSERT INTO docs (body, meta) VALUES ('hello', '{"title": "greeting"}');
CREATE VIEW titles AS SELECT json_extract(meta, '$.title') AS title FROM docs;
CREATE VIEW arrows AS SELECT meta ->> 'title' AS title FROM docs;
CREATE VIEW logged AS SELECT sqlite_log(1, 'from the schema') AS x FROM docs;
CREATE VIEW plain AS
    SELECT upper(body) AS loud, body LIKE 'h%' AS h, replace(body, 'l', 'L') AS r,
           trim(body, 'ho') AS t, instr(body, 'l') AS i, body GLOB 'h*' AS g
    FROM docs;
CREATE VIRTUAL TABLE notes USING fts5(body);
INSERT INTO notes VALUES ('the quick brown fox');
CREATE VIEW found AS SELECT * FROM notes;
"""
"""A file whose views call what SQLite runs only from a trusted schema: JSON functions (not
innocuous in SQLite 3.40) and a virtual table."""
GENERATED = """
CREATE TABLE events (data TEXT, kind TEXT AS (json_extract(data, '$.kind')));
INSERT INTO events (data) VALUES ('{"kind": "click"}');
CREATE TABLE other (x);
"""
"""A table whose generated column calls a JSON function: SQLite 3.40 reads no table of such a
file with the schema untrusted (it reports the schema as malformed)."""

NOT_INNOCUOUS = (
    "a view of this database calls what SQLite runs only from a trusted schema; "
    "query the tables it reads instead"
)


@pytest.fixture
def untrusted(tmp_path: Path) -> Path:
    return make_database(tmp_path / "untrusted.db", UNTRUSTED, numbers=0)


@pytest.mark.parametrize(
    ("sql", "unsafe"),
    [
        ("SELECT * FROM titles", "json_extract()"),
        ("SELECT * FROM arrows", "->>()"),
        ("SELECT * FROM found", 'virtual table "notes"'),
    ],
)
async def test_a_schema_calling_what_sqlite_does_not_mark_innocuous_is_refused(
    untrusted: Path, sql: str, unsafe: str
) -> None:
    """With ``trusted_schema`` on (SQLite's default) every one of these runs the file's own
    function calls; off, SQLite refuses them when the statement is compiled."""
    error = await failure(tools_for(untrusted), sql)
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.details[0]["fixable_args"] == ["sql"]
    assert error.message == f"query_database: sql: unsafe use of {unsafe}: {NOT_INNOCUOUS}"


async def test_a_generated_column_calling_what_sqlite_does_not_mark_innocuous_closes_the_file(
    tmp_path: Path,
) -> None:
    """SQLite does not ask the authorizer about a generated column's functions: only an
    untrusted schema keeps them to innocuous ones, and SQLite then reads no table of the file."""
    path = make_database(tmp_path / "generated.db", GENERATED, numbers=0)
    for sql in ("SELECT kind FROM events", "SELECT x FROM other"):
        error = await failure(tools_for(path), sql)
        assert error.type == ErrorCode.CONFIGURATION_ERROR
        assert error.message == (
            f"query_database: {path}: malformed database schema (events) - unsafe use of "
            "json_extract(); SQLite reads such a schema only when it is trusted "
            "(database.trusted_schema)"
        )


async def test_a_deployment_can_trust_a_schema_it_wrote(tmp_path: Path) -> None:
    path = make_database(tmp_path / "generated.db", GENERATED + UNTRUSTED, numbers=0)
    tools = tools_for(path, trusted_schema=True)
    assert (await query(tools, "SELECT kind FROM events")).rows == [["click"]]
    assert (await query(tools, "SELECT * FROM titles")).rows == [["greeting"]]
    # The allowlist still holds for the views' own calls.
    error = await failure(tools, "SELECT * FROM logged")
    assert error.message == (
        "query_database: sql: not authorized: function sqlite_log(); only reads are allowed"
    )


async def test_a_view_calling_a_function_off_the_allowlist_is_refused(untrusted: Path) -> None:
    # sqlite_log() is innocuous to SQLite, so only the allowlist stops the view from writing to
    # the error log; a deny-list of dangerous functions let it through.
    error = await failure(tools_for(untrusted), "SELECT * FROM logged")
    assert error.message == (
        "query_database: sql: not authorized: function sqlite_log(); only reads are allowed"
    )


async def test_what_the_query_itself_calls_and_innocuous_views_still_run(untrusted: Path) -> None:
    tools = tools_for(untrusted)
    plain = await query(tools, "SELECT * FROM plain")
    assert plain.rows == [["HELLO", 1, "heLLo", "ell", 3, 1]]
    direct = await query(
        tools, "SELECT id, body, json_extract(meta, '$.title'), meta ->> 'title' FROM docs"
    )
    assert direct.rows == [[1, "hello", "greeting", "greeting"]]


async def test_the_schema_describes_what_it_can_and_says_why_not_for_the_rest(
    untrusted: Path,
) -> None:
    described = {table.name: table for table in (await schema(tools_for(untrusted))).tables}
    assert described["titles"].columns == []
    assert described["titles"].error == "unsafe use of json_extract()"
    # Naming a view's columns runs none of its calls.
    assert [c.name for c in described["logged"].columns] == ["x"]
    assert [c.name for c in described["plain"].columns] == ["loud", "h", "r", "t", "i", "g"]
    assert [c.name for c in described["docs"].columns] == ["id", "body", "meta"]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT sqlite_log(1, 'x')",
        "SELECT rtreenode(2, x'00')",
        "SELECT rtreedepth(x'00')",
        "SELECT subtype(1)",
        "SELECT fts5(NULL)",
        "SELECT highlight(1, 2, 3, 4)",
        "SELECT snippet(1)",
        "SELECT fts3_tokenizer('simple')",
    ],
)
async def test_functions_off_the_allowlist_are_refused(untrusted: Path, sql: str) -> None:
    error = await failure(tools_for(untrusted), sql)
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.message.startswith("query_database: sql: not authorized: function ")


def test_the_allowlist_holds_every_innocuous_built_in_but_the_log() -> None:
    """SQLite's own list of this build's functions: every one it marks innocuous is allowed
    (``sqlite_log`` and the ``subtype`` test function aside), so normal queries keep working."""
    innocuous = 0x200000  # SQLITE_INNOCUOUS, as pragma_function_list reports it
    plain = sqlite3.connect(":memory:")
    listed = plain.execute("SELECT name, flags FROM pragma_function_list").fetchall()
    plain.close()
    names = {name for name, flags in listed if flags & innocuous}
    assert len(names) > 80
    assert names - ALLOWED_FUNCTIONS == {"sqlite_log", "subtype"}


REPEAT = 20
"""Calls of one slow function in one row: no instruction between them runs the progress
handler, so at least 100 s of work (at the costs measured here) run as one step."""
STRINGS = (
    "WITH t(a, b, c, d, e) AS (SELECT printf('%.200000c', 'a'), printf('%.50000c', 'b') || 'a', "
    "printf('%.1000000c', 'a'), printf('%.500000c', 'a') || 'b', printf('%.20000c', 'a') || 'b') "
)


@pytest.mark.parametrize(
    "call",
    [
        "printf('%.*c', 2000000000, 'x')",  # pads one character at a time: about 12 s
        "format('%.2000000000c', 'x')",
        "trim(a, b)",  # these six cost the product of their arguments' lengths: 5-30 s each
        "ltrim(a, b)",
        "rtrim(a, b)",
        "c LIKE '%' || e",
        "c LIKE '%' || e ESCAPE '!'",
        "c GLOB '*' || e",
        "instr(c, d)",
        "replace(c, d, '')",
    ],
)
async def test_slow_calls_inside_one_row_end_at_the_deadline(database: Path, call: str) -> None:
    before = children()
    started = time.monotonic()
    error = await failure(
        tools_for(database, timeout_seconds=0.5),
        f"{STRINGS}SELECT {', '.join([call] * REPEAT)} FROM t",
    )
    assert error.type == ErrorCode.TIMED_OUT
    assert error.message == "query_database: stopped at the 0.5 s deadline; narrow the query"
    assert time.monotonic() - started < 60  # not the minutes the calls would take
    assert children() == before


async def test_thousands_of_printf_calls_end_at_the_deadline_and_leave_nothing_running(
    database: Path,
) -> None:
    """3,000 calls of 12 s each in one expression of one row: ten hours of work inside function
    calls, where neither the progress handler nor ``interrupt()`` can reach."""
    hundred = "max(" + ", ".join(["printf('%.*c', 2e9, '')"] * 100) + ")"
    sql = "SELECT max(" + ", ".join([hundred] * 30) + ")"
    tools = tools_for(database, timeout_seconds=0.5)
    threads, before = threading.active_count(), children()
    call = asyncio.ensure_future(failure(tools, sql))
    done, _ = await asyncio.wait({call}, timeout=60)
    assert done, "the query outlived its deadline by a minute"
    assert call.result().type == ErrorCode.TIMED_OUT
    # Nothing is left doing the work: no query process, no extra thread.
    assert children() == before
    for _ in range(100):
        if threading.active_count() <= threads:
            break
        await asyncio.sleep(0.02)
    assert threading.active_count() <= threads
    assert (await query(tools, "SELECT count(*) FROM items")).rows == [[4]]


async def test_a_row_larger_than_the_query_process_memory_fails_cleanly(database: Path) -> None:
    """600 values of 1 MB each in one row: each is within the value limit, the row is not
    within the query process's 512 MiB address space, and the worker never holds it."""
    blobs = ", ".join(["zeroblob(1000000)"] * 600)
    error = await failure(tools_for(database), f"SELECT {blobs}")
    assert error.type == ErrorCode.EXECUTION_FAILED
    assert error.message == (
        "query_database: the query ran out of memory (the query process may use 536870912 "
        "bytes); select fewer or smaller values"
    )


async def test_functions_give_sqlites_own_results(database: Path) -> None:
    expressions = [
        "'abc' LIKE 'A%'",
        "'Äbc' LIKE 'ä%'",
        "'a_c' LIKE 'a!_c' ESCAPE '!'",
        "'abc' LIKE NULL",
        "12345 LIKE '%34%'",
        "X'616263' LIKE 'a%'",
        "'abc' GLOB 'a*'",
        "glob('[a-c]?c', 'abc')",
        "trim('xxaxx', 'x')",
        "rtrim(12300.5, '05.')",
        "instr(X'010203', X'03')",
        "replace(1.25, '.', ',')",
        "printf('%5.2f|%-4d|%q', 3.14159, 7, 'it''s')",
        "CAST(X'6869FF' AS TEXT) LIKE 'hi%'",
    ]
    sql = f"SELECT {', '.join(expressions)}"
    result = await query(tools_for(database), sql)
    plain = sqlite3.connect(":memory:")
    plain.text_factory = lambda data: data.decode("utf-8", "replace")
    assert result.rows == [list(plain.execute(sql).fetchone())]
    plain.close()
    error = await failure(tools_for(database), "SELECT 'a' LIKE 'a' ESCAPE 'xy'")
    assert error.message == "query_database: sql: ESCAPE expression must be a single character"
