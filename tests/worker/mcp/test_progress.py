"""An MCP client that asked for progress gets a running command's output in its notifications.

``toolcalls mcp`` over stdio, a real worker: a shell prints numbered lines for a few seconds; the
client's progress messages carry the latest line as it goes, in order, then the result; over
MCP Tasks, ``tasks/get`` says the same in the task's status message.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.worker.mcp.raw import Raw
from tests.worker.mcp.support import Deployment, Open, Recorder, text_of
from tests.worker.mcp.test_tasks import serve
from tests.worker.support import Spawn

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


async def test_a_tasks_status_message_carries_the_latest_output(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment, worker: None
) -> None:
    url, _ = serve(spawn, tmp_path, address, deployment)
    raw = Raw(url)
    created = await raw.call("run_shell", {"command": SCRIPT})
    assert created["resultType"] == "task"
    task_id = created["taskId"]
    running = await raw.until(
        task_id,
        lambda task: bool(
            re.fullmatch(r"run_shell: running: step \d+", task.get("statusMessage", ""))
        ),
        what="a status message with a line of output",
    )
    first = int(running["statusMessage"].rsplit(" ", 1)[1])
    later = await raw.until(
        task_id,
        lambda task: (
            task["status"] == "completed" or int(task["statusMessage"].rsplit(" ", 1)[1]) > first
        ),
        what="a later line",
    )
    if later["status"] == "working":
        assert int(later["statusMessage"].rsplit(" ", 1)[1]) > first
    done = await raw.until(task_id, lambda task: task["status"] == "completed", what="completed")
    assert done["result"]["structuredContent"]["exit_code"] == 0
