"""One write through the real file family, stalled at a chosen step, for a test to SIGKILL.

    python -m tests.support.file_write_crash ROOT STORE TOOL PATH SIZE STALL

``TOOL`` is ``create_file`` or ``replace_file``; the content is ``SIZE`` bytes. ``STALL`` is
``write`` (sleep between the chunks of the temporary file) or ``sync`` (sleep after the swap,
before the directory sync). The real bytes go to the real files; only the pauses are added. Each
step is printed (``chunk <bytes>``, ``swapped``) so the test knows where the process is when it
kills it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext
from toolcalls.activities.files import atomic
from toolcalls.activities.files.checkpoints import CheckpointStore
from toolcalls.activities.files.paths import Roots
from toolcalls.activities.files.settings import FilesSettings
from toolcalls.activities.files.write_models import CreateFileArgs, ReplaceFileArgs
from toolcalls.activities.files.writing import FileWriteTools

PAUSE = 0.5


def _stall(step: str) -> None:
    write_all, sync_dir = atomic.write_all, atomic.sync_dir

    def slow_write_all(fd: int, data: bytes, progress: Any = None) -> None:
        def report(written: int) -> None:
            if progress is not None:
                progress(written)
            print(f"chunk {written}", flush=True)
            time.sleep(PAUSE)

        write_all(fd, data, report)

    def slow_sync_dir(dir_fd: int) -> None:
        print("swapped", flush=True)
        time.sleep(60)
        sync_dir(dir_fd)

    if step == "write":
        atomic.write_all = slow_write_all
    else:
        atomic.sync_dir = slow_sync_dir


async def main(root: str, store: str, tool: str, path: str, size: int, step: str) -> None:
    settings = FilesSettings(roots=[Path(root)], checkpoints=Path(store))
    tools = FileWriteTools(settings, Roots([Path(root)]), CheckpointStore(Path(store)))
    _stall(step)
    content = "n" * size
    context = CallContext("wf-crash", "toolu_crash", "wf-crash:toolu_crash", None, None)
    if tool == "create_file":
        await ActivityEnvironment().run(
            tools.create_file, CreateFileArgs(path=path, content=content), context
        )
    else:
        await ActivityEnvironment().run(
            tools.replace_file, ReplaceFileArgs(path=path, content=content), context
        )
    print("done", flush=True)


if __name__ == "__main__":
    root, store, tool, path, size, step = sys.argv[1:]
    asyncio.run(main(root, store, tool, path, int(size), step))
