"""How the ``toolcalls`` command ends: its exit codes, the one line on stderr, a closed pipe.

Exit codes: 0 success, 1 the call or action did not succeed, 2 usage, configuration or connection
errors. Every path leaves through ``leave``, which flushes and ends with ``os._exit``: a process
that used a Temporal client can abort at interpreter exit (temporalio/sdk-python issue 300).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn, TextIO

from toolcalls.worker.telemetry import tracing

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class StartupError(RuntimeError):
    """The worker cannot start; the message says why and what to do."""


class CommandError(Exception):
    """A command did not succeed: ``code`` is the exit status, the message one line for stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def leave(code: int, message: str | None = None) -> NoReturn:
    """Print ``message`` (one line) on stderr, flush everything, end the process with ``code``."""
    if message:
        try:
            print(message, file=sys.stderr)
        except BrokenPipeError:
            silence(sys.stderr)
    # Spans still buffered go out before the process ends without running its exit handlers.
    tracing.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            # The reader went away (`toolcalls tools | head -3`): what it did not read is dropped.
            silence(stream)
    logging.shutdown()
    os._exit(code)


def silence(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null, so that nothing written later (buffered output
    flushed at the end, a log line) meets the closed pipe again: what Python's documentation
    recommends for SIGPIPE."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
