"""What a deployment decides about the database tools."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolcalls.activities.limits import MAX_STORED_RESULT_BYTES

DEFAULT_TIMEOUT_SECONDS = 5.0
"""``SQLiteDatabase(timeout_seconds=5)`` (spec): the deadline of one query or schema read."""
MAX_TIMEOUT_SECONDS = 25.0
"""The deadline must end well inside the tools' 30 s start-to-close (spec ``timeout_seconds=30``),
so that a query stopped by it reports ``timed_out`` itself instead of losing its attempt."""
DEFAULT_MAX_RESULT_BYTES = 1_048_576
"""``max_result_bytes=1048576`` (spec); also the ceiling, a worker's payload cap, unless the
deployment stores large payloads outside history (``[payloads]``): then its result limit."""
DEFAULT_MAX_TABLES = 100
"""``max_tables=100`` (spec)."""
MAX_TABLES_CEILING = 10_000


class DatabaseSettings(BaseModel):
    """``database_schema`` and ``query_database``: one existing SQLite file, read-only."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path | None = None
    """Absolute path of an existing SQLite file on the hosts that run the tools; never created."""
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=MAX_TIMEOUT_SECONDS)
    max_result_bytes: int = Field(
        default=DEFAULT_MAX_RESULT_BYTES, ge=1_024, le=MAX_STORED_RESULT_BYTES
    )
    """Compact UTF-8 JSON of a whole result; also SQLite's limit on any one string or blob. At
    most the deployment's result limit (checked with the deployment)."""
    max_tables: int = Field(default=DEFAULT_MAX_TABLES, ge=1, le=MAX_TABLES_CEILING)
    trusted_schema: bool = False
    """SQLite's ``trusted_schema``: when off (the default), the file's views, triggers, generated
    columns and indexes may call only the functions and virtual tables SQLite marks innocuous.
    Turn on only for a file whose schema the deployment itself wrote."""
