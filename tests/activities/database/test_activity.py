"""The database tools as activities: heartbeats, cancellation killing the query process,
concurrency, and a query process that ends without an answer.

``ActivityEnvironment`` gives a real activity context; the queries run against a real file.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support.children import children
from tests.support.databases import CALL, failure, query, tools_for
from toolcalls.activities.database import DatabaseTools, SQLiteDatabase, sqlite as sqlite_backend
from toolcalls.activities.database.settings import (
    DEFAULT_TIMEOUT_SECONDS,
    MAX_TIMEOUT_SECONDS,
    DatabaseSettings,
)
from toolcalls.activities.database.tools import DatabaseSchemaArgs
from toolcalls.workflows.models.call import ErrorCode

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"


async def test_canceling_the_activity_stops_the_running_statement(database: Path) -> None:
    """The deadline is 20 s; only the cancellation can end the query sooner, and the activity
    returns only once the query process is gone."""
    tools = tools_for(database, timeout_seconds=20)
    env = ActivityEnvironment()
    call = asyncio.create_task(query(tools, ENDLESS, env=env))
    await asyncio.sleep(0.3)
    assert not call.done()
    env.cancel()
    # Bounded by wait_for's 5 s, a quarter of the 20 s deadline the query would otherwise run to.
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)
    # Nothing is left running: the next query runs at once and the file is untouched.
    assert (await query(tools, "SELECT count(*) FROM items")).rows == [[4]]


async def test_a_cancellation_before_the_connection_opens_still_stops_the_query(
    database: Path,
) -> None:
    tools = tools_for(database, timeout_seconds=20)
    env = ActivityEnvironment()
    call = asyncio.create_task(query(tools, ENDLESS, env=env))
    await asyncio.sleep(0)  # the thread may not have opened the connection yet
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)


async def test_the_tools_heartbeat_while_they_run(database: Path) -> None:
    tools = tools_for(database, timeout_seconds=0.3)
    beats: list[tuple[Any, ...]] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    with pytest.raises(ApplicationError, match="deadline"):
        await query(tools, ENDLESS, max_rows=7, env=env)
    assert beats[0] == ({"tool": "query_database", "max_rows": 7},)
    beats.clear()
    await env.run(tools.database_schema, DatabaseSchemaArgs(), CALL)
    assert beats == [({"tool": "database_schema"},)]


async def test_canceling_stops_a_query_stuck_inside_one_function_call(database: Path) -> None:
    """One ``printf`` call pads for about 12 s, where neither the progress handler nor
    ``interrupt()`` reaches: the cancellation kills the query process instead."""
    tools = tools_for(database, timeout_seconds=20)
    env = ActivityEnvironment()
    before = children()
    call = asyncio.create_task(query(tools, "SELECT printf('%.*c', 2000000000, 'x')", env=env))
    await asyncio.sleep(0.5)
    assert not call.done()
    assert len(children() - before) == 1
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)  # well before the call itself would have returned
    assert children() == before


async def test_queries_run_in_parallel_off_the_event_loop(database: Path) -> None:
    """Two slow queries at once run side by side, each in its own query process, and the loop
    stays responsive."""
    tools = tools_for(database, timeout_seconds=0.6)
    during = 0
    most = 0
    before = children()

    async def tick() -> None:
        nonlocal during, most
        while True:
            await asyncio.sleep(0.01)
            running = len(children() - before)
            most = max(most, running)
            during += running == 2

    ticker = asyncio.create_task(tick())
    results = await asyncio.gather(
        query(tools, ENDLESS), query(tools, ENDLESS), return_exceptions=True
    )
    ticker.cancel()
    assert all("deadline" in str(result) for result in results)
    # Counted in /proc rather than timed: both statements were running at once.
    assert most == 2
    # The loop kept running while both were: a loop a query blocked could not look twice.
    assert during >= 2
    assert children() == before


async def test_a_database_locked_by_a_writer_is_a_retryable_failure(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A busy wait of its own would last 600 s: only the 0.3 s deadline can end it within 60 s.
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_SECONDS", 600.0)
    writer = sqlite3.connect(database, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        tools = tools_for(database, timeout_seconds=0.3)
        started = time.monotonic()
        with pytest.raises(ApplicationError) as caught:
            await query(tools, "SELECT count(*) FROM items")
        assert time.monotonic() - started < 60
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert caught.value.type == ErrorCode.EXECUTION_FAILED
    assert not caught.value.non_retryable
    assert caught.value.message == "query_database: the database stayed locked by a writer"


@pytest.mark.parametrize(
    ("script", "code", "message"),
    [
        (
            "import sys; sys.stdout.write('x' * 2_000_000)",
            ErrorCode.EXECUTION_FAILED,
            "the query process wrote more than 1114112 bytes",
        ),
        (
            "import sys; sys.exit(3)",
            ErrorCode.EXECUTION_FAILED,
            "the query process exited with status 3",
        ),
        (
            "print('{not json')",
            ErrorCode.EXECUTION_FAILED,
            "the query process exited with status 0",
        ),
        (
            "import os; os.kill(os.getpid(), 15)",
            ErrorCode.EXECUTION_FAILED,
            "the query process was killed by SIGTERM",
        ),
        (
            "raise MemoryError",
            ErrorCode.EXECUTION_FAILED,
            "the query ran out of memory (the query process may use 536870912 bytes); "
            "select fewer or smaller values",
        ),
        (  # its CPU limit, past the deadline and the kill that should have come first
            "import os, resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
            "os.kill(os.getpid(), 24)",
            ErrorCode.TIMED_OUT,
            "stopped at the 5 s deadline; narrow the query",
        ),
    ],
    ids=["flood", "exit", "garbage", "killed", "memory", "cpu-limit"],
)
async def test_a_query_process_without_an_answer(
    database: Path, script: str, code: ErrorCode, message: str
) -> None:
    before = children()
    # Only the cpu-limit case is about the 5 s deadline; the others get the longest one, so that
    # a process slowed by a busy machine (parallel test workers) still ends on its own.
    deadline = DEFAULT_TIMEOUT_SECONDS if code is ErrorCode.TIMED_OUT else MAX_TIMEOUT_SECONDS
    command = [sys.executable, "-c", script]
    backend = SQLiteDatabase(database, timeout_seconds=deadline, command=command)
    error = await failure(DatabaseTools(DatabaseSettings(path=database), backend), "SELECT 1")
    assert (error.type, error.message) == (code, f"query_database: {message}")
    assert children() == before


async def test_a_query_process_that_cannot_start(database: Path, tmp_path: Path) -> None:
    backend = SQLiteDatabase(database, command=[str(tmp_path / "missing-python")])
    error = await failure(DatabaseTools(DatabaseSettings(path=database), backend), "SELECT 1")
    assert (error.type, error.message) == (
        ErrorCode.EXECUTION_FAILED,
        "query_database: cannot start the query process: No such file or directory",
    )
