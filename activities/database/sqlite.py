"""``SQLiteDatabase``: read-only SQL over one existing SQLite file, each call in a killable process.

What it can touch: the one file the deployment configured, read-only, and nothing else. Every
call runs in a query process of its own (``reader``: the confinement, the authorizer, the
limits, the deadline inside it), started with this interpreter in isolated mode without site
packages, with an environment of only ``LC_ALL``, ``cwd=/`` and its own session. The worker
sends it the request on stdin, reads at most the result's byte cap and a little of its answer,
and kills its group ``KILL_GRACE`` after the deadline, when the call is canceled, or when the
answer overflows. A query stuck inside one SQLite function call, where no progress handler
runs, thus costs a killed process at the deadline, never a worker thread held for minutes; one
that outgrows ``MEMORY_BYTES`` fails cleanly in its own address space.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolcalls.activities.child_process import collect, ended, kill
from toolcalls.activities.database import reader
from toolcalls.activities.database.backend import (
    DatabaseBusy,
    DatabaseError,
    DatabaseUnavailable,
    Parameters,
    QueryRejected,
    QueryTimedOut,
    ValueTooLarge,
)
from toolcalls.activities.database.settings import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_TABLES,
    DEFAULT_TIMEOUT_SECONDS,
)
from toolcalls.activities.processes.runner import spawn

READER_SCRIPT = reader.__file__
BUSY_TIMEOUT_SECONDS = 2.0
"""How long an open waits for a writer's lock; readers of a WAL database never wait."""
KILL_GRACE = 1.0
"""Seconds past the deadline before the query process is killed. It stops a statement at the
deadline itself and reports; only work inside one function call lasts until the kill."""
MEMORY_BYTES = 536_870_912
"""Address space of the query process (``RLIMIT_AS``): one row of large values (up to 1,000 of
``max_result_bytes`` each) fails with ``execution_failed`` instead of growing the worker."""
ANSWER_OVERHEAD = 65_536
"""What the query process may write beyond the result's byte cap (the compact result is within
the cap; an error record is short)."""
_ENV = {"LC_ALL": "C.UTF-8"}


class SQLiteDatabase:
    """One existing SQLite file, read through a fresh read-only query process per call.

    ``trusted_schema`` lets the file's schema call what SQLite allows only in a trusted one
    (see ``DatabaseSettings``). ``command`` runs one call (the JSON request on its stdin); it
    defaults to this interpreter running ``reader.py`` in isolated mode without site packages
    (it imports only the standard library; each import costs every call).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        max_tables: int = DEFAULT_MAX_TABLES,
        trusted_schema: bool = False,
        command: Sequence[str] | None = None,
    ) -> None:
        text = os.fspath(path)
        if text in ("", ":memory:") or text.startswith("file:"):
            raise ValueError("in-memory and URI databases are not supported; give a file path")
        self.path = Path(text)
        if not self.path.is_absolute():
            raise ValueError(f"{self.path} is not an absolute path")
        if timeout_seconds <= 0 or max_result_bytes <= 0 or max_tables <= 0:
            raise ValueError("timeout_seconds, max_result_bytes and max_tables must be positive")
        self.timeout_seconds = timeout_seconds
        self.max_result_bytes = max_result_bytes
        self.max_tables = max_tables
        self.trusted_schema = trusted_schema
        self.command = tuple(command or (sys.executable, "-I", "-S", READER_SCRIPT))

    async def describe_schema(self) -> dict[str, Any]:
        """Tables and views of the main database, by name, with their columns."""
        return await self._call({"op": "schema"})

    async def query(self, *, sql: str, parameters: Parameters, max_rows: int) -> dict[str, Any]:
        """Run one read-only statement; rows stop at ``max_rows`` or the byte budget."""
        if max_rows < 1:
            raise QueryRejected("max_rows must be at least 1", "max_rows")
        return await self._call(
            {"op": "query", "sql": sql, "parameters": _bound(parameters), "max_rows": max_rows}
        )

    async def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` in a query process of its own, killed at the deadline or on cancellation."""
        started = time.monotonic()
        # CLOCK_MONOTONIC is the machine's, so the process reads this deadline as the worker
        # does: starting the process counts against the call's time.
        deadline = started + self.timeout_seconds
        message = json.dumps(
            {
                **request,
                "path": str(self.path),
                "deadline": deadline,
                "busy_timeout": BUSY_TIMEOUT_SECONDS,
                "max_result_bytes": self.max_result_bytes,
                "max_tables": self.max_tables,
                "trusted_schema": self.trusted_schema,
                "memory_bytes": MEMORY_BYTES,
                "cpu_seconds": math.ceil(self.timeout_seconds + KILL_GRACE) + 1,
            }
        ).encode()
        try:
            process, canceled = await spawn(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=_ENV,
                cwd="/",
                start_new_session=True,
            )
        except OSError as exc:
            raise DatabaseError(f"cannot start the query process: {exc.strerror or exc}") from None
        limit = self.max_result_bytes + ANSWER_OVERHEAD
        try:
            if canceled:
                raise asyncio.CancelledError
            left = deadline + KILL_GRACE - time.monotonic()
            out, err, overflow = await asyncio.wait_for(
                _exchange(process, message, limit), max(left, 0.0)
            )
        except TimeoutError:
            raise QueryTimedOut(self._too_slow()) from None
        finally:
            await asyncio.shield(kill(process))
        if overflow:
            raise DatabaseError(f"the query process wrote more than {limit} bytes")
        try:
            answer = json.loads(out)
            if not isinstance(answer, dict):
                raise ValueError("not an object")
        except ValueError:
            raise self._died(process.returncode, err) from None
        if "error" in answer:
            raise self._failure(answer)
        return answer

    def _failure(self, record: Mapping[str, Any]) -> DatabaseError:
        """The backend error a query process reported."""
        kind, message = record.get("error"), str(record.get("message", ""))
        if kind == "rejected":
            return QueryRejected(message, str(record.get("argument", "sql")))
        if kind == "timed_out":
            return QueryTimedOut(self._too_slow())
        if kind == "too_large":
            return ValueTooLarge(message)
        if kind == "busy":
            return DatabaseBusy(message)
        if kind == "unavailable":
            return DatabaseUnavailable(message)
        if kind == "memory":
            return self._out_of_memory()
        return DatabaseError(message or "the query failed")

    def _died(self, returncode: int | None, stderr: bytes) -> DatabaseError:
        """The query process ended without an answer."""
        if returncode == -signal.SIGXCPU:
            return QueryTimedOut(self._too_slow())
        if b"MemoryError" in stderr:
            return self._out_of_memory()
        return DatabaseError(f"the query process {ended(returncode)}")

    def _too_slow(self) -> str:
        return f"stopped at the {self.timeout_seconds:g} s deadline; narrow the query"

    def _out_of_memory(self) -> DatabaseError:
        return DatabaseError(
            f"the query ran out of memory (the query process may use {MEMORY_BYTES} bytes); "
            "select fewer or smaller values"
        )


async def _exchange(
    process: asyncio.subprocess.Process, request: bytes, limit: int
) -> tuple[bytes, bytes, bool]:
    """Send ``request`` while collecting the answer (a process that fails early may write to
    stderr before it has read everything)."""

    async def send() -> None:
        assert process.stdin is not None
        # A process that died before reading all of it says why in its exit status.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write(request)
            await process.stdin.drain()
        process.stdin.close()

    _, answer = await asyncio.gather(send(), collect(process, limit))
    return answer


def _bound(parameters: Parameters) -> list[Any] | dict[str, Any]:
    """Parameters as ``sqlite3`` binds them: a list positionally, a mapping by name."""
    if isinstance(parameters, Mapping):
        return dict(parameters)
    return list(parameters or ())
