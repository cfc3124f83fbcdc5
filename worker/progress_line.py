"""The line ``toolcalls call`` keeps on a terminal's stderr while it waits: elapsed time, the
call's id and tool, and its phase (with the command that moves it on), redrawn in place and
erased when the result arrives."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Awaitable
from typing import TextIO

from toolcalls.worker.render import elapsed, shorten
from toolcalls.workflows.models.call import Phase, ToolCallResult
from toolcalls.workflows.reach.client import CallView, ToolCallClient

PROGRESS_INTERVAL = 0.5
"""Seconds between redraws of the progress line."""
STATUS_INTERVAL = 1.0
"""Seconds between the progress line's status checks."""
DEFAULT_COLUMNS = 79
"""The progress line's width on a terminal that does not say how wide it is."""


async def watched(
    calls: ToolCallClient, workflow_id: str, tool: str, waiting: Awaitable[ToolCallResult]
) -> ToolCallResult:
    """Await ``waiting`` (the call's result) while a progress line shows its phase."""
    started = time.monotonic()
    phase = "starting"

    async def watch() -> None:
        nonlocal phase
        while True:
            # The line is cosmetic: whatever it meets, it keeps its last phase and the wait goes on.
            with contextlib.suppress(Exception):
                phase = _phase_text(await calls.status(workflow_id))
            await asyncio.sleep(STATUS_INTERVAL)

    result = asyncio.ensure_future(waiting)
    watcher = asyncio.ensure_future(watch())
    line = ProgressLine(sys.stderr)
    try:
        while not result.done():
            line.show(f"{elapsed(time.monotonic() - started)} {workflow_id} {tool}: {phase}")
            await asyncio.wait({result}, timeout=PROGRESS_INTERVAL)
    finally:
        watcher.cancel()
        result.cancel()
        line.clear()
    outcome: ToolCallResult = result.result()
    return outcome


def _phase_text(view: CallView) -> str:
    state = view.state
    if state.result is not None:
        return state.result.status.value
    text = state.phase.value.replace("_", " ")
    if state.phase is Phase.AWAITING_APPROVAL:
        text += f" (toolcalls approve|deny|respond {state.workflow_id})"
    elif state.phase is Phase.AWAITING_ANSWER:
        text += f" (toolcalls answer {state.workflow_id} TEXT)"
    if view.running and not view.live:
        text += "; no worker is serving it"
    return text


class ProgressLine:
    """One line on a terminal, redrawn in place and erased at the end."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def show(self, text: str) -> None:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError):
            columns = 0
        # A line that wraps cannot be redrawn with a carriage return. A terminal that does not
        # know its size says 0 columns.
        width = columns - 1 if columns > 20 else DEFAULT_COLUMNS
        self.stream.write("\r" + shorten(text, width) + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
