"""The write-side file tools on real files: a root, a checkpoint store, activity-context calls."""

from __future__ import annotations

import os
import sqlite3
import stat
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext, ToolArgs
from toolcalls.activities.files.checkpoints import CheckpointStore
from toolcalls.activities.files.paths import Roots
from toolcalls.activities.files.settings import FilesSettings
from toolcalls.activities.files.writing import FileWriteTools
from toolcalls.workflows.models.approval import Prepared
from toolcalls.workflows.models.call import ErrorCode

T = TypeVar("T")


class Files:
    """A root with a write family over it; ``reopen`` is a worker restart on the same store."""

    def __init__(self, base: Path, *, busy_timeout: float = 5.0, **settings: Any) -> None:
        self.base = base
        self.root = base / "root"
        self.root.mkdir(exist_ok=True)
        self.outside = base / "outside"
        self.outside.mkdir(exist_ok=True)
        self.db = base / "state" / "checkpoints.db"
        self.settings = FilesSettings(roots=[self.root], checkpoints=self.db, **settings)
        self.roots = Roots([self.root])
        self.busy_timeout = busy_timeout
        self.store = CheckpointStore(self.db, busy_timeout=busy_timeout)
        self.tools = FileWriteTools(self.settings, self.roots, self.store)

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def entry(self, name: str) -> Path:
        return self.root / name

    def reopen(self) -> FileWriteTools:
        self.store.close()
        self.store = CheckpointStore(self.db, busy_timeout=self.busy_timeout)
        self.tools = FileWriteTools(self.settings, self.roots, self.store)
        return self.tools

    def close(self) -> None:
        self.store.close()
        self.roots.close()

    def state(self, change_id: str) -> str:
        """A record's state, read as another process would (the worker's store stays open)."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as db:
            row = db.execute("SELECT state FROM changes WHERE change_id = ?", (change_id,))
            return str(row.fetchone()[0])

    def leftovers(self) -> list[str]:
        """Temporary files left in the root."""
        return sorted(n for n in os.listdir(self.root) if n.startswith(".toolcalls-"))


def call(key: str | None = None, precondition: dict[str, Any] | None = None) -> CallContext:
    """A call's context; a fresh idempotency key unless ``key`` names one."""
    call_id = key or f"toolu_{uuid.uuid4().hex[:12]}"
    return CallContext(
        workflow_id="wf-test",
        call_id=call_id,
        idempotency_key=f"wf-test:{call_id}",
        approval=None,
        precondition=precondition,
    )


async def run(
    method: Callable[[Any, CallContext], Awaitable[T]],
    args: ToolArgs,
    context: CallContext | None = None,
) -> T:
    """Run a family method the way the worker does: inside an activity context."""
    result: T = await ActivityEnvironment().run(method, args, context or call())
    return result


async def approved(
    prepare: Callable[[Any, CallContext], Awaitable[Prepared]],
    args: ToolArgs,
) -> tuple[Prepared, CallContext]:
    """The preview of a call, and the context its execution gets once approved."""
    context = call()
    prepared = await run(prepare, args, context)
    return prepared, call(context.call_id, prepared.precondition)


async def refused(awaitable: Awaitable[Any], code: ErrorCode) -> ApplicationError:
    """The typed error ``awaitable`` fails with; it must carry ``code``."""
    with pytest.raises(ApplicationError) as info:
        await awaitable
    assert info.value.type == code.value, info.value.message
    assert info.value.non_retryable or code is ErrorCode.EXECUTION_FAILED
    return info.value


def fixable(error: ApplicationError) -> list[str]:
    details = error.details[0] if error.details else {}
    return list(details.get("fixable_args", [])) if isinstance(details, dict) else []


def mode(path: str | Path) -> int:
    return os.lstat(path).st_mode & 0o7777


def is_link(path: str | Path) -> bool:
    return stat.S_ISLNK(os.lstat(path).st_mode)


def present(path: str | Path) -> bool:
    """Whether any entry (a dangling link too) has this name."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    return True
