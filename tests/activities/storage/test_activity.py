"""The storage tools as activities: heartbeats, cancellation and a writer holding the lock.

``ActivityEnvironment`` gives a real activity context; the lock is held by a real second SQLite
connection, as another worker process would.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext
from toolcalls.activities.storage import SQLiteStorage, StorageTools
from toolcalls.activities.storage.settings import StorageSettings
from toolcalls.activities.storage.tools import GetValueArgs, SetValueArgs
from toolcalls.workflows.models.call import ErrorCode

CALL = CallContext("wf", "call", "wf:call", None, None)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "kv.db"


@pytest.fixture
def lock(path: Path) -> Iterator[sqlite3.Connection]:
    """A second connection that holds the database's write lock until it commits."""
    SQLiteStorage(path).usage()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    yield holder
    if holder.in_transaction:
        holder.execute("COMMIT")
    holder.close()


def tools_for(path: Path, write_busy_timeout_ms: int) -> StorageTools:
    storage = SQLiteStorage(path, write_busy_timeout_ms=write_busy_timeout_ms)
    return StorageTools(StorageSettings(allow_write=True), storage)


async def test_writes_heartbeat_with_the_key(path: Path, lock: sqlite3.Connection) -> None:
    tools = tools_for(path, 5_000)
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    threading.Timer(0.3, lambda: lock.execute("COMMIT")).start()
    result = await env.run(tools.set_value, SetValueArgs(key="k", value=1), CALL)
    assert result.created
    assert beats
    assert beats[0] == ({"key": "k"},)


async def test_a_lock_held_past_the_busy_timeout_is_a_retryable_failure(
    path: Path, lock: sqlite3.Connection
) -> None:
    tools = tools_for(path, 200)
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(tools.set_value, SetValueArgs(key="k", value=1), CALL)
    error = caught.value
    assert error.type == ErrorCode.EXECUTION_FAILED
    assert not error.non_retryable
    assert error.message.startswith("set_value: 'k': the database stayed locked")
    assert error.message.endswith("nothing was changed")
    lock.execute("COMMIT")
    assert not (await tools.get_value(GetValueArgs(key="k"), CALL)).found


async def test_a_canceled_write_reports_what_really_happened(
    path: Path, lock: sqlite3.Connection
) -> None:
    """The write waits for the lock in a thread; canceling the activity cannot stop the thread,
    so the tool waits for it and reports the write it made rather than a false cancellation."""
    tools = tools_for(path, 5_000)
    env = ActivityEnvironment()
    call = asyncio.create_task(env.run(tools.set_value, SetValueArgs(key="k", value=1), CALL))
    await asyncio.sleep(0.2)
    env.cancel()
    await asyncio.sleep(0.2)
    assert not call.done()
    lock.execute("COMMIT")
    result = await asyncio.wait_for(call, 5)
    assert result.created
    assert (await tools.get_value(GetValueArgs(key="k"), CALL)).found


async def test_a_canceled_write_that_failed_reports_the_failure(
    path: Path, lock: sqlite3.Connection
) -> None:
    tools = tools_for(path, 400)
    env = ActivityEnvironment()
    call = asyncio.create_task(env.run(tools.set_value, SetValueArgs(key="k", value=1), CALL))
    await asyncio.sleep(0.1)
    env.cancel()
    with pytest.raises(ApplicationError, match="nothing was changed"):
        await asyncio.wait_for(call, 5)


async def test_reads_do_not_wait_for_a_writer(path: Path, lock: sqlite3.Connection) -> None:
    tools = tools_for(path, 5_000)
    lock.execute("INSERT INTO kv VALUES ('tool-values', 'k', 0, '1')")  # not committed
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await tools.get_value(GetValueArgs(key="k"), CALL)
    assert not result.found
    assert loop.time() - started < 1
