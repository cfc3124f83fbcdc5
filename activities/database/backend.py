"""The contract between the database tools and a database: ``DatabaseBackend``.

A backend owns its connections, credentials, read-only enforcement, limits and cancellation; the
tools own argument validation, heartbeats and the mapping of the errors below to tool errors. The
tools never parse SQL: what a statement may do is the backend's to enforce.

    DatabaseError               anything the backend reports about a call
    ├── QueryRejected           the SQL or its parameters: the model can fix them
    ├── QueryTimedOut           stopped by the backend's deadline
    ├── ValueTooLarge           one value is larger than the result may be
    ├── DatabaseBusy            locked by a writer; a retry may succeed
    └── DatabaseUnavailable     the configured database is missing or unusable
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias

Scalar: TypeAlias = str | int | float | bool | None
Parameters: TypeAlias = Sequence[Scalar] | Mapping[str, Scalar] | None


class DatabaseBackend(Protocol):
    """A read-only database the tools can describe and query."""

    async def describe_schema(self) -> dict[str, Any]:
        """``{"tables": [{"name", "type", "columns": [...]}, ...], "truncated": bool}``."""
        ...

    async def query(self, *, sql: str, parameters: Parameters, max_rows: int) -> dict[str, Any]:
        """``{"columns": [...], "rows": [[...], ...], "truncated": bool}`` for one statement."""
        ...


class DatabaseError(Exception):
    """A failure the backend reports; the message is short, lowercase and safe to show."""


class QueryRejected(DatabaseError):
    """The statement or its parameters are refused; ``argument`` names which."""

    def __init__(self, message: str, argument: str = "sql") -> None:
        super().__init__(message)
        self.argument = argument


class QueryTimedOut(DatabaseError):
    """The backend's deadline stopped the statement."""


class ValueTooLarge(DatabaseError):
    """A value larger than the result may be; refused before it was transferred."""


class DatabaseBusy(DatabaseError):
    """The database stayed locked by a writer."""


class DatabaseUnavailable(DatabaseError):
    """The configured database is missing, not a regular file, or not a database."""
