"""The database tools as activities: heartbeats, cancellation interrupting SQLite, concurrency.

``ActivityEnvironment`` gives a real activity context; the queries run against a real file.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.database import sqlite as sqlite_backend
from activities.database.sqlite import SQLiteDatabase
from activities.database.tools import DatabaseSchemaArgs
from tests.support.databases import CALL, database, query, tools_for
from workflows.models import ErrorCode

__all__ = ["database"]  # the fixture, used by name

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"


async def test_canceling_the_activity_interrupts_the_running_statement(database: Path) -> None:
    """The deadline is 20 s; only ``interrupt()`` from the event loop can end the query sooner,
    and the activity returns only once the statement has stopped and its connection closed."""
    tools = tools_for(database, timeout_seconds=20)
    env = ActivityEnvironment()
    call = asyncio.create_task(query(tools, ENDLESS, env=env))
    await asyncio.sleep(0.3)
    assert not call.done()
    env.cancel()
    # Bounded by wait_for's 5 s, a quarter of the 20 s deadline the query would otherwise run to.
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)
    # The worker thread is free again: the next query runs at once and the file is untouched.
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


async def test_queries_run_in_parallel_off_the_event_loop(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two slow queries at once run side by side, and the loop stays responsive."""
    tools = tools_for(database, timeout_seconds=0.6)
    ticks = 0
    # Counted in the worker threads rather than timed: both statements were running at once.
    running = 0
    most = 0
    lock = threading.Lock()
    in_connection = SQLiteDatabase._in_connection

    def counted(self: SQLiteDatabase, *args: Any) -> Any:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        try:
            return in_connection(self, *args)
        finally:
            with lock:
                running -= 1

    monkeypatch.setattr(SQLiteDatabase, "_in_connection", counted)

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    results = await asyncio.gather(
        query(tools, ENDLESS), query(tools, ENDLESS), return_exceptions=True
    )
    ticker.cancel()
    assert all("deadline" in str(result) for result in results)
    assert most == 2
    assert ticks > 20


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
