"""Real file trees and the read-side file tools over them, for the ``test_files_read*`` tests."""

from __future__ import annotations

import asyncio
import ctypes
import os
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support import processes
from toolcalls.activities.base import CallContext
from toolcalls.activities.files.paths import Roots
from toolcalls.activities.files.read_models import (
    ListFilesArgs,
    ListFilesResult,
    ReadFileArgs,
    ReadFileResult,
    SearchFilesArgs,
    SearchFilesResult,
)
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.activities.files.settings import FilesSettings
from toolcalls.workflows.models.call import ErrorCode

T = TypeVar("T")

CALL = CallContext(
    workflow_id="wf", call_id="call", idempotency_key="wf:call", approval=None, precondition=None
)
NOBODY = 65534


@contextmanager
def read_tools(root: Path, *, fallback: bool = False, **settings: Any) -> Iterator[FileReadTools]:
    """``FileReadTools`` over ``root``; ``fallback`` takes the component walk instead of openat2."""
    roots = Roots([root])
    if fallback:
        roots._openat2 = False
    try:
        yield FileReadTools(FilesSettings(roots=[root], **settings), roots)
    finally:
        roots.close()


def real_root(tmp_path: Path) -> Path:
    """``tmp_path`` as the canonical path ``Roots`` checks paths against."""
    return Path(os.path.realpath(tmp_path))


def activity_env(heartbeat: float | None = None) -> ActivityEnvironment:
    return processes.activity_env(activity_type="search_files", heartbeat=heartbeat)


async def read(tools: FileReadTools, path: str, **args: Any) -> ReadFileResult:
    return await tools.read_file(ReadFileArgs(path=path, **args), CALL)


async def listing(tools: FileReadTools, path: str, **args: Any) -> ListFilesResult:
    return await tools.list_files(ListFilesArgs(path=path, **args), CALL)


async def search(
    tools: FileReadTools, path: str, query: str, env: ActivityEnvironment | None = None, **args: Any
) -> SearchFilesResult:
    """``search_files`` in an activity context (it heartbeats)."""
    env = env or activity_env()
    result: SearchFilesResult = await env.run(
        tools.search_files, SearchFilesArgs(path=path, query=query, **args), CALL
    )
    return result


async def refusal(
    action: Awaitable[Any], code: ErrorCode = ErrorCode.INVALID_ARGUMENTS
) -> ApplicationError:
    """The tool error ``action`` raises (within 10 s: a refusal must never hang)."""
    with pytest.raises(ApplicationError) as caught:
        await asyncio.wait_for(action, 10)
    assert caught.value.type == code.value, caught.value
    return caught.value


def unprivileged(action: Callable[[], Awaitable[T]]) -> T:
    """Run ``action`` on a fresh event loop whose worker threads check file permissions as an
    ordinary user, so that mode 000 means unreadable even when the tests run as root.

    Linux's per-thread ``setfsuid`` drops the filesystem capabilities (``CAP_DAC_OVERRIDE``) of
    the thread that calls it; ``asyncio.to_thread`` then runs the tool's work in such a thread.
    """

    def drop() -> None:
        if os.geteuid() == 0:
            ctypes.CDLL(None, use_errno=True).setfsuid(NOBODY)

    async def main() -> T:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1, initializer=drop))
        return await action()

    with ThreadPoolExecutor(1) as runner:
        return runner.submit(asyncio.run, main()).result(timeout=60)


def make_files(directory: Path, count: int, content: bytes = b"x\n", prefix: str = "f") -> None:
    """``count`` files named ``{prefix}00000``... in ``directory``, written without ``Path``."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index in range(count):
            file = os.open(f"{prefix}{index:05d}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(file, content)
            os.close(file)
    finally:
        os.close(fd)
