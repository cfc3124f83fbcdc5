"""A helper process's answer read up to a cap: past it the helper is killed and reaped at once,
also when the pipe's reading had paused with more output unread than the cap."""

from __future__ import annotations

import asyncio
import signal
import sys

from toolcalls.activities.child_process import collect, kill
from toolcalls.activities.processes.runner import spawn

FLOOD = "import sys; sys.stdout.write('x' * 2_000_000); sys.stdout.flush()"


async def flood() -> asyncio.subprocess.Process:
    process, _ = await spawn(
        sys.executable,
        "-c",
        FLOOD,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    return process


async def test_output_past_the_cap_kills_the_helper_and_returns_what_was_read() -> None:
    process = await flood()
    try:
        out, err, overflow = await asyncio.wait_for(collect(process, 100_000), 20)
    finally:
        await kill(process)
    assert overflow
    assert 100_000 < len(out) < 2_000_000
    assert err == b""
    assert process.returncode == -signal.SIGKILL


async def test_a_paused_pipe_with_more_than_the_cap_unread_still_ends() -> None:
    # While nothing reads, asyncio buffers the helper's output until its high-water mark and then
    # pauses the pipe: more is left unread than one read takes, and the pipe never closes on its
    # own. The answer must still come at once, not at a deadline.
    process = await flood()
    try:
        await asyncio.sleep(1.0)
        out, _, overflow = await asyncio.wait_for(collect(process, 1_000), 20)
    finally:
        await kill(process)
    assert overflow
    assert len(out) > 1_000
    assert process.returncode == -signal.SIGKILL
