"""The database tools through a real ``ToolCallWorkflow`` on a real server, over a SQLite file,
and the ``[database]`` configuration that enables them."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.databases import make_database
from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
    wait_for,
)
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.activities.database import DatabaseTools, SQLiteDatabase
from toolcalls.worker.config import Config, ConfigError, build_catalog, parse_config
from toolcalls.worker.plugin import build_instances
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    Phase,
)

TOOLS = ["database_schema", "query_database"]
ASK = CapabilityPolicy(rules={"database.read": Effect.REQUIRE_APPROVAL})


def database_config(task_queue: str, path: Path, **settings: Any) -> Config:
    return make_config(
        task_queue, tools=[*ALL_TOOL_NAMES, *TOOLS], database={"path": str(path), **settings}
    )


async def test_both_tools_run_at_once_under_the_default_ceiling(
    client: Client, task_queue: str, database: Path
) -> None:
    async with running_worker(client, database_config(task_queue, database)):
        described = await run_call(client, task_queue, "database_schema")
        queried = await run_call(
            client,
            task_queue,
            "query_database",
            {
                "sql": "SELECT id, name, image, id FROM items WHERE category = :c ORDER BY id",
                "parameters": [{"name": "c", "value": "fruit"}],
                "max_rows": None,
            },
        )
    assert described.status is CallStatus.COMPLETED, described.error
    assert described.capabilities == ["database.read"]
    assert described.approval is None
    assert [t["name"] for t in described.output["tables"]] == ["fruit", "items", "numbers", "pairs"]
    assert queried.status is CallStatus.COMPLETED, queried.error
    assert queried.approval is None
    assert queried.output == {
        "columns": ["id", "name", "image", "id"],
        "rows": [[1, "apple", {"base64": "iVBORw=="}, 1], [4, "dates", None, 4]],
        "truncated": False,
    }


async def test_both_tools_run_once_approved_and_the_preview_shows_the_sql_exactly(
    client: Client, task_queue: str, database: Path
) -> None:
    sql = "SELECT name\nFROM items\nWHERE price > ? AND name <> ?  -- cheap ones out\nORDER BY 1"
    arguments = {"sql": sql, "parameters": [2, "dates"], "max_rows": 2}
    async with running_worker(client, database_config(task_queue, database)):
        handle = await start_call(client, task_queue, "query_database", arguments, policy=ASK)
        pending = await pending_approval(handle)
        assert pending.capabilities == ["database.read"]
        assert [artifact.kind for artifact in pending.preview] == ["sql"]
        shown = pending.preview[0]
        assert shown.text == sql
        assert shown.data == {"parameters": [2, "dates"], "max_rows": 2}
        assert shown.title == f"read-only query of {database}"
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="dba"))
        queried = await asyncio.wait_for(handle.result(), 30)

        handle = await start_call(client, task_queue, "database_schema", {}, policy=ASK)
        pending = await pending_approval(handle)
        assert [artifact.kind for artifact in pending.preview] == ["arguments"]
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        described = await asyncio.wait_for(handle.result(), 30)
    assert queried.status is CallStatus.COMPLETED, queried.error
    assert queried.approval is not None
    assert queried.approval.approver == "dba"
    assert queried.output == {
        "columns": ["name"],
        "rows": [["bread"], ["cheese"]],
        "truncated": False,
    }
    assert described.status is CallStatus.COMPLETED, described.error
    assert len(described.output["tables"]) == 4


async def test_refusals_and_deadlines_reach_the_model(
    client: Client, task_queue: str, database: Path
) -> None:
    config = database_config(task_queue, database, timeout_seconds=0.5)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    async with running_worker(client, config):
        write = await run_call(client, task_queue, "query_database", {"sql": "DROP TABLE items"})
        at_plan = await run_call(
            client, task_queue, "query_database", {"sql": "SELECT 1", "max_rows": 5_000}
        )
        slow = await run_call(client, task_queue, "query_database", {"sql": endless})
    assert write.status is CallStatus.FAILED
    assert write.error is not None
    assert (write.error.code, write.error.fixable_args) == (ErrorCode.INVALID_ARGUMENTS, ["sql"])
    assert write.error.message == (
        "query_database: sql: not authorized: delete sqlite_master; only reads are allowed"
    )
    assert at_plan.error is not None
    assert (at_plan.error.code, at_plan.error.fixable_args) == (
        ErrorCode.INVALID_ARGUMENTS,
        ["max_rows"],
    )
    assert slow.status is CallStatus.TIMED_OUT
    assert slow.error is not None
    assert slow.error.code is ErrorCode.TIMED_OUT
    assert slow.error.message == "query_database: stopped at the 0.5 s deadline; narrow the query"


async def test_a_missing_database_is_a_configuration_error_for_the_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    path = make_database(tmp_path / "gone.db", numbers=0)
    async with running_worker(client, database_config(task_queue, path)):
        os.unlink(path)
        result = await run_call(client, task_queue, "database_schema")
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.CONFIGURATION_ERROR
    assert result.error.message == f"database_schema: {path} does not exist"


def problems(**data: Any) -> str:
    config = parse_config({"tools": TOOLS, **data})
    with pytest.raises(ConfigError) as caught:
        build_catalog(config)
    return str(caught.value)


def test_the_configuration_needs_an_existing_absolute_file(tmp_path: Path) -> None:
    assert "database.path: database_schema, query_database need a SQLite file" in problems()
    assert "database.path: app.db is not an absolute path" in problems(database={"path": "app.db"})
    missing = tmp_path / "missing.db"
    assert f"database.path: {missing} is not an existing file" in problems(
        database={"path": str(missing)}
    )
    real = make_database(tmp_path / "real.db", numbers=0)
    link = tmp_path / "link.db"
    link.symlink_to(real)
    assert f"database.path: {link} is a symlink; give the file itself" in problems(
        database={"path": str(link)}
    )
    assert f"database.path: {tmp_path} is not an existing file" in problems(
        database={"path": str(tmp_path)}
    )
    assert "database.path: :memory: is not an absolute path" in problems(
        database={"path": ":memory:"}
    )
    assert not missing.exists()


def test_the_file_must_exist_only_where_the_tools_run() -> None:
    elsewhere = parse_config(
        {
            "tools": TOOLS,
            "worker": {"serve_tools": False},
            "database": {"path": "/on/the/database/host/app.db"},
        }
    )
    assert build_catalog(elsewhere).names == TOOLS


def test_the_deadline_must_end_inside_the_activity(tmp_path: Path) -> None:
    path = make_database(tmp_path / "app.db", numbers=0)
    message = problems(
        database={"path": str(path), "timeout_seconds": 20},
        activities={"timeouts": {"query_database": {"start_to_close_seconds": 15}}},
    )
    assert (
        "database.timeout_seconds: 20 s does not end inside query_database's 15 s start_to_close"
        in message
    )
    with pytest.raises(ConfigError, match=r"database\.timeout_seconds: Input should be less"):
        parse_config({"database": {"timeout_seconds": 60}})
    assert (
        "database.max_result_bytes: at most 1048576, the deployment's result limit (more needs "
        "a [payloads] store and its max_result_bytes)"
    ) in problems(database={"path": str(path), "max_result_bytes": 2_000_000})
    stored = {"store": "local", "local": {"path": str(tmp_path / "payloads")}}
    config = parse_config(
        {
            "tools": TOOLS,
            "database": {"path": str(path), "max_result_bytes": 2_000_000},
            "payloads": stored,
        }
    )
    assert build_catalog(config).get("query_database") is not None


def test_the_family_is_built_from_the_settings(tmp_path: Path) -> None:
    path = make_database(tmp_path / "app.db", numbers=0)
    config = parse_config(
        {
            "tools": TOOLS,
            "database": {"path": str(path), "timeout_seconds": 2.5, "max_tables": 7},
        }
    )
    catalog = build_catalog(config)
    family = build_instances(config, catalog, catalog.names)[DatabaseTools]
    assert isinstance(family, DatabaseTools)
    backend = family.backend
    assert isinstance(backend, SQLiteDatabase)
    assert (backend.path, backend.timeout_seconds, backend.max_tables) == (path, 2.5, 7)
    assert backend.max_result_bytes == 1_048_576
    assert DatabaseTools not in build_instances(config, catalog, [])
    options = catalog.options("query_database")
    assert (options.start_to_close, options.heartbeat) == (
        timedelta(seconds=30),
        timedelta(seconds=10),
    )
    assert options.maximum_attempts == 1


async def test_a_running_query_canceled_ends_canceled_a_read_has_no_effect(
    client: Client, task_queue: str, database: Path
) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    settings = database_config(task_queue, database, timeout_seconds=20)
    async with running_worker(client, settings):
        handle = await start_call(client, task_queue, "query_database", {"sql": endless})
        await wait_for(handle, lambda state: state.phase is Phase.RUNNING)
        await asyncio.sleep(1.0)
        started = time.monotonic()
        await handle.cancel()
        result = await asyncio.wait_for(handle.result(), 30)
    # Well before the 20 s deadline: the cancellation, not the deadline, ended it.
    assert time.monotonic() - started < 10
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.code is ErrorCode.CANCELED
