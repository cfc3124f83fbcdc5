"""``run_script``: run a short client script's coroutine and leave cleanly.

A process that used a Temporal client can abort at interpreter exit (``PyGILState_Release``,
temporalio/sdk-python issue 300): the SDK's runtime threads are still alive while the interpreter
tears down. A script that ends through ``run_script`` flushes its output and leaves with
``os._exit``, before that teardown, with the exit status its coroutine chose.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

EXIT_INTERRUPTED = 130
"""The status of a script stopped with Ctrl-C, as a shell reports SIGINT."""


def run_script(main: Callable[[], Awaitable[Any]] | Awaitable[Any]) -> NoReturn:
    """Run ``main`` (an ``async def`` function, or its coroutine) and end the process.

    The exit status is ``main``'s result when it is an ``int`` (0 when it returns anything else,
    ``None`` included), the code of a ``SystemExit`` it raises, 1 after any other exception (its
    traceback on stderr), and 130 on Ctrl-C. Standard output, standard error and logging are
    flushed first; ``atexit`` handlers do not run.

        async def main() -> None:
            calls = await ToolCallClient.connect("localhost:7233")
            ...

        toolcalls.run_script(main)
    """
    code: int
    try:
        result = asyncio.run(_coroutine(main))
        code = result if isinstance(result, int) and not isinstance(result, bool) else 0
    except SystemExit as exit_:
        code = _exit_code(exit_)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except BaseException:
        traceback.print_exc()
        code = 1
    _flush()
    os._exit(code)


async def _coroutine(main: Callable[[], Awaitable[Any]] | Awaitable[Any]) -> Any:
    return await (main() if callable(main) else main)


def _exit_code(exit_: SystemExit) -> int:
    if exit_.code is None:
        return 0
    if isinstance(exit_.code, int):
        return exit_.code
    print(exit_.code, file=sys.stderr)  # sys.exit("message") prints it and means 1
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe or stream: nothing more can be said.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    logging.shutdown()
