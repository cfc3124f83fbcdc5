"""``database_schema`` and ``query_database`` over one ``DatabaseBackend``.

The tools reach one database, chosen by the deployment; the model writes SQL and parameters, never
a path or a connection string. Read-only enforcement, deadlines and cancellation belong to the
backend (``SQLiteDatabase`` by default); the tools validate arguments, keep a heartbeat open
(which is how a cancellation reaches the backend), map the backend's errors at one boundary and
bound every result again, to the byte, whatever backend produced it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import pydantic_core
from pydantic import Field, JsonValue, ValidationError, WithJsonSchema, field_validator

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.database.backend import (
    DatabaseBackend,
    DatabaseBusy,
    DatabaseError,
    DatabaseUnavailable,
    QueryRejected,
    QueryTimedOut,
    ValueTooLarge,
)
from toolcalls.activities.database.settings import DatabaseSettings
from toolcalls.activities.database.sqlite import SQLiteDatabase
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode

DEFAULT_MAX_ROWS = 100
MAX_ROWS = 1_000
"""``max_rows`` is 1-1,000 (spec)."""
MAX_SQL_CHARS = 100_000
"""SQL travels in the request, the plan, the approval request and history: kept well under the
256 KB payload warning."""
MAX_PARAMETERS = 1_000
MAX_PARAMETER_CHARS = 100_000
SQLITE_INTEGER = 2**63
"""Integers bind as SQLite's signed 64-bit INTEGER."""

_PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")

Scalar = Annotated[
    bool
    | int
    | Annotated[float, Field(strict=True, allow_inf_nan=False)]
    | Annotated[str, Field(max_length=MAX_PARAMETER_CHARS)]
    | None,
    Field(description="A string, number, boolean or null."),
]

_SCALAR_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "maxLength": MAX_PARAMETER_CHARS},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
    ]
}
_PARAMETERS_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "maxItems": MAX_PARAMETERS, "items": _SCALAR_SCHEMA},
        {
            "type": "array",
            "maxItems": MAX_PARAMETERS,
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "value": _SCALAR_SCHEMA},
                "required": ["name", "value"],
                "additionalProperties": False,
            },
        },
        {"type": "null"},
    ]
}
"""What the model is shown: strict schemas cannot describe an object with free keys, so named
parameters are offered as ``[{"name": ..., "value": ...}]``; a JSON object is accepted as well
(the spec's form, for application code), and both become the same mapping."""

Parameters = Annotated[
    Annotated[list[Scalar], Field(max_length=MAX_PARAMETERS)]
    | Annotated[dict[str, Scalar], Field(max_length=MAX_PARAMETERS)]
    | None,
    WithJsonSchema(_PARAMETERS_SCHEMA),
]


def _named_pairs(value: Any) -> Any:
    """``[{"name": n, "value": v}, ...]`` as ``{n: v, ...}``; anything else passes through."""
    if not (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
        return value
    named: dict[Any, Any] = {}
    for index, pair in enumerate(value):
        if set(pair) != {"name", "value"}:
            raise ValueError(f"entry {index} must be an object with exactly name and value")
        name = pair["name"]
        if not isinstance(name, str):
            raise ValueError(f"entry {index}: name must be a string")
        if name in named:
            raise ValueError(f"{name[:40]!r} is given twice")
        named[name] = pair["value"]
    return named


class DatabaseSchemaArgs(ToolArgs):
    # The docstring is the model-facing schema's description: plain text, no RST.
    """database_schema takes no arguments."""


class QueryDatabaseArgs(ToolArgs):
    sql: str = Field(
        min_length=1,
        max_length=MAX_SQL_CHARS,
        description="One read-only SQL statement (SELECT, WITH ... SELECT, VALUES, EXPLAIN).",
    )
    parameters: Parameters = Field(
        default=None,
        description=(
            "Values bound to the statement's placeholders: a list of values for ? placeholders, "
            'or a list of {"name", "value"} objects for :name placeholders (name without the '
            "colon). Never put values into the SQL text."
        ),
    )
    max_rows: int = Field(default=DEFAULT_MAX_ROWS, ge=1, le=MAX_ROWS, description="1-1000.")

    @field_validator("sql")
    @classmethod
    def _statement(cls, sql: str) -> str:
        if not sql.strip():
            raise ValueError("sql is blank")
        if "\x00" in sql:
            raise ValueError("sql contains a NUL character")
        return sql

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters(cls, parameters: Any) -> Any:
        parameters = _named_pairs(parameters)
        values = parameters.values() if isinstance(parameters, dict) else parameters
        # Before the union, whose float member would take an out-of-range integer silently.
        if isinstance(values, Iterable) and not isinstance(values, str):
            for value in values:
                if isinstance(value, int) and not -SQLITE_INTEGER <= value < SQLITE_INTEGER:
                    raise ValueError("integers must fit SQLite's signed 64-bit INTEGER")
        if isinstance(parameters, dict):
            bad = [name for name in parameters if not _PARAMETER_NAME.fullmatch(str(name))]
            if bad:
                raise ValueError(
                    f"parameter names must be identifiers (without ':'), not {str(bad[0])[:40]!r}"
                )
        return parameters


class SchemaColumn(ToolResult):
    name: str
    type: str
    """The declared type, as written (SQLite types are affinities; may be empty)."""
    not_null: bool
    default: str | None
    """The default's SQL expression text, or ``None``."""
    primary_key: int
    """Position in the primary key (1-based); 0 when not part of it."""


class SchemaTable(ToolResult):
    name: str
    type: str
    """``table`` or ``view``."""
    columns: list[SchemaColumn]
    error: str | None = None
    """Why the columns could not be read (a view over a missing table, say)."""


class DatabaseSchemaResult(ToolResult):
    tables: list[SchemaTable]
    truncated: bool


class QueryDatabaseResult(ToolResult):
    columns: list[str]
    """In order, duplicates kept."""
    rows: list[list[JsonValue]]
    """Positional values; a blob is ``{"base64": ...}``, a non-finite real ``{"float": ...}``."""
    truncated: bool
    """More rows exist than were returned (the row cap or the byte cap stopped them)."""


class DatabaseTools:
    """The database tools of one deployment: one backend, read-only, bounded results."""

    def __init__(self, settings: DatabaseSettings, backend: DatabaseBackend | None = None) -> None:
        if backend is None:
            if settings.path is None:
                raise ValueError("no database configured")
            backend = SQLiteDatabase(
                settings.path,
                timeout_seconds=settings.timeout_seconds,
                max_result_bytes=settings.max_result_bytes,
                max_tables=settings.max_tables,
                trusted_schema=settings.trusted_schema,
            )
        self.settings = settings
        self.backend = backend

    async def database_schema(
        self, args: DatabaseSchemaArgs, call: CallContext
    ) -> DatabaseSchemaResult:
        """Tables and views with their columns; ``truncated`` past the table or byte limit."""
        async with Heartbeat(tool="database_schema"):
            with _database_errors("database_schema", fixable=False):
                raw = await self.backend.describe_schema()
        result = _validated("database_schema", DatabaseSchemaResult, raw)
        return self._bounded_schema(result)

    async def prepare_query_database(self, args: QueryDatabaseArgs, call: CallContext) -> Prepared:
        """Preview: the SQL and its parameters exactly as they will be bound."""
        where = str(self.settings.path) if self.settings.path is not None else "the database"
        return Prepared(
            preview=[
                PreviewArtifact(
                    kind="sql",
                    title=f"read-only query of {where}",
                    text=args.sql,
                    data={"parameters": args.parameters, "max_rows": args.max_rows},
                )
            ]
        )

    async def query_database(
        self, args: QueryDatabaseArgs, call: CallContext
    ) -> QueryDatabaseResult:
        """Rows of one read-only statement; ``truncated`` past ``max_rows`` or the byte cap."""
        async with Heartbeat(tool="query_database", max_rows=args.max_rows):
            with _database_errors("query_database", fixable=True):
                raw = await self.backend.query(
                    sql=args.sql, parameters=args.parameters, max_rows=args.max_rows
                )
        result = _validated("query_database", QueryDatabaseResult, raw)
        return self._bounded_rows(result, args.max_rows)

    def _bounded_rows(self, result: QueryDatabaseResult, max_rows: int) -> QueryDatabaseResult:
        """At most ``max_rows`` rows and ``max_result_bytes`` of JSON, whatever the backend did."""
        rows = result.rows[:max_rows]
        truncated = result.truncated or len(rows) < len(result.rows)
        limit = self.settings.max_result_bytes
        if _size(result) > limit:
            empty = QueryDatabaseResult(columns=result.columns, rows=[], truncated=False)
            used = _size(empty)
            if used > limit:
                raise tool_error(
                    ErrorCode.OUTPUT_TOO_LARGE,
                    f"query_database: sql: the column names alone are over the {limit}-byte "
                    "result limit",
                    fixable_args=["sql"],
                )
            kept = _fitting([len(pydantic_core.to_json(row)) for row in rows], used, limit)
            truncated = truncated or kept < len(rows)
            rows = rows[:kept]
        return QueryDatabaseResult(columns=result.columns, rows=rows, truncated=truncated)

    def _bounded_schema(self, result: DatabaseSchemaResult) -> DatabaseSchemaResult:
        tables = result.tables[: self.settings.max_tables]
        truncated = result.truncated or len(tables) < len(result.tables)
        limit = self.settings.max_result_bytes
        if _size(result) > limit:
            used = _size(DatabaseSchemaResult(tables=[], truncated=False))
            kept = _fitting([len(table.model_dump_json()) for table in tables], used, limit)
            truncated = truncated or kept < len(tables)
            tables = tables[:kept]
        return DatabaseSchemaResult(tables=tables, truncated=truncated)


def _fitting(sizes: list[int], used: int, limit: int) -> int:
    """How many leading items of a JSON list fit in ``limit`` bytes with ``used`` already taken
    (each item after the first costs its comma too)."""
    for kept, size in enumerate(sizes):
        used += size + (1 if kept else 0)
        if used > limit:
            return kept
    return len(sizes)


def _size(result: ToolResult) -> int:
    return len(result.model_dump_json())


def _validated(tool: str, model: type[Any], raw: Any) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError:
        raise tool_error(
            ErrorCode.EXECUTION_FAILED, f"{tool}: the database backend returned a malformed result"
        ) from None


@contextmanager
def _database_errors(tool: str, *, fixable: bool) -> Iterator[None]:
    """The one boundary where backend failures become tool errors; ``fixable``: the tool has
    arguments (SQL, parameters) the model can change."""
    sql = ["sql"] if fixable else []
    try:
        yield
    except QueryRejected as exc:
        raise tool_error(
            ErrorCode.INVALID_ARGUMENTS,
            f"{tool}: {exc.argument}: {exc}" if fixable else f"{tool}: {exc}",
            fixable_args=[exc.argument] if fixable else [],
        ) from None
    except QueryTimedOut as exc:
        raise tool_error(ErrorCode.TIMED_OUT, f"{tool}: {exc}", fixable_args=sql) from None
    except ValueTooLarge as exc:
        raise tool_error(ErrorCode.OUTPUT_TOO_LARGE, f"{tool}: {exc}", fixable_args=sql) from None
    except DatabaseBusy as exc:
        raise tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {exc}", retryable=True) from None
    except DatabaseUnavailable as exc:
        raise tool_error(ErrorCode.CONFIGURATION_ERROR, f"{tool}: {exc}") from None
    except DatabaseError as exc:
        raise tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {exc}") from None
