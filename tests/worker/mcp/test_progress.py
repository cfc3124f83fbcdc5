"""An MCP client that asked for progress gets a running command's output in its notifications.

``toolcalls mcp`` over stdio, a real worker: a shell prints numbered lines for a few seconds; the
client's progress messages carry the latest line as it goes, in order, then the result.
"""

from __future__ import annotations

import re

from tests.worker.mcp.support import Open, Recorder, text_of

SCRIPT = "i=0; while [ $i -lt 60 ]; do echo step $i; i=$((i+1)); sleep 0.1; done"
"""Six seconds, a line every tenth of a second."""


async def test_progress_notifications_carry_the_output_as_it_comes(
    session: Open, worker: None
) -> None:
    recorder = Recorder()
    async with session(recorder) as mcp:
        result = await mcp.call_tool(
            "run_shell", {"command": SCRIPT}, progress_callback=recorder.on_progress
        )
    assert not result.is_error, text_of(result)
    shown = [
        int(match.group(1))
        for message in recorder.progress
        if (match := re.fullmatch(r"run_shell: running: step (\d+)", message))
    ]
    assert len(shown) >= 3, recorder.progress  # several looks while it ran
    assert shown == sorted(shown)
    assert shown[-1] < 60
