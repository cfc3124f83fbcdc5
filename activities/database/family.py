"""The database family: ``database_schema`` and ``query_database`` over one SQLite file
(``[database]``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from pydantic import Field

from toolcalls.activities.database.settings import DatabaseSettings
from toolcalls.activities.database.tools import (
    DatabaseSchemaArgs,
    DatabaseSchemaResult,
    DatabaseTools,
    QueryDatabaseArgs,
    QueryDatabaseResult,
)
from toolcalls.activities.family import Deployment, Family, FamilySettings, Resources, needs
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import SideEffect

_DATABASE_TIMEOUTS = Timeouts(start_to_close=timedelta(seconds=30), heartbeat=timedelta(seconds=10))
"""``database_tools(timeout_seconds=30)`` (spec); the backend's own deadline (5 s by default, at
most 25 s) ends a query first. Heartbeats carry cancellation, which interrupts the statement."""

DATABASE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="database_schema",
        description=(
            "List the tables and views of the configured SQL database with their columns (name, "
            "declared type, not_null, default, primary_key position). truncated=true means more "
            "tables exist than were listed."
        ),
        arguments=DatabaseSchemaArgs,
        result=DatabaseSchemaResult,
        side_effect=SideEffect.READ,
        capabilities=("database.read",),
        timeouts=_DATABASE_TIMEOUTS,
        implementation=DatabaseTools,
    ),
    ToolSpec(
        name="query_database",
        description=(
            "Run one read-only SQL statement (SQLite dialect) against the configured database, "
            "with values bound through parameters (a list of values for ?, a list of "
            '{"name", "value"} objects for :name). Writes, ATTACH, PRAGMA and transactions are '
            "refused. Returns columns (in order, duplicates kept), rows as lists (blobs as "
            '{"base64": ...}) and truncated: true when max_rows (1-1000) or the byte limit '
            "stopped the rows. Use WHERE, ORDER BY and LIMIT to narrow."
        ),
        arguments=QueryDatabaseArgs,
        result=QueryDatabaseResult,
        side_effect=SideEffect.READ,
        capabilities=("database.read",),
        timeouts=_DATABASE_TIMEOUTS,
        implementation=DatabaseTools,
    ),
)
"""``database_schema`` and ``query_database`` (``toolcalls.activities.database``)."""


class DatabaseFamilySettings(FamilySettings):
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)


def _build(settings: DatabaseFamilySettings, resources: Resources) -> Iterable[object]:
    if not resources.serves(DatabaseTools):
        return []
    # Opens nothing now: every call opens the file afresh, read-only.
    return [resources.open("database.path", lambda: DatabaseTools(settings.database))]


def _problems(settings: DatabaseFamilySettings, deployment: Deployment) -> list[str]:
    """One existing SQLite file (never created), and a query deadline that ends inside the
    activity's start-to-close so the tool reports it itself."""
    db = settings.database
    enabled = deployment.enabled_of(DATABASE_TOOLS)
    if not enabled:
        return []
    problems = []
    if db.path is None:
        problems.append(f"database.path: {needs(enabled)} a SQLite file")
    elif not db.path.is_absolute():
        problems.append(f"database.path: {db.path} is not an absolute path")
    elif deployment.runs_here(enabled):
        if db.path.is_symlink():
            problems.append(f"database.path: {db.path} is a symlink; give the file itself")
        elif not db.path.is_file():
            problems.append(f"database.path: {db.path} is not an existing file")
    if db.max_result_bytes > deployment.result_bytes:
        problems.append(
            f"database.max_result_bytes: at most {deployment.result_bytes}, the deployment's "
            "result limit (more needs a [payloads] store and its max_result_bytes)"
        )
    for name in enabled:
        limit = deployment.start_to_close(name)
        if limit is not None and db.timeout_seconds >= limit:
            problems.append(
                f"database.timeout_seconds: {db.timeout_seconds:g} s does not end inside "
                f"{name}'s {limit:g} s start_to_close"
            )
    return problems


DATABASE = Family(
    name="database",
    settings=DatabaseFamilySettings,
    tools=DATABASE_TOOLS,
    build=_build,
    problems=_problems,
)
