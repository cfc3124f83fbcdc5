"""A helper process that does one call's work for the worker (the document parser, the query
process): its answer read up to a cap, then its whole group killed and reaped.

The caller starts it with ``toolcalls.activities.processes.runner.spawn(...,
start_new_session=True)``, so its pid is its group's id, and kills it however the call ends: a
helper holds nothing worth a grace period, and nothing it started outlives the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

READ_CHUNK = 65_536
MAX_ERROR_BYTES = 4_096
"""The tail of a helper's stderr kept for a failure message."""
KILL_SETTLE = 2.0
"""How long to wait for a killed helper to be reaped."""


async def collect(process: asyncio.subprocess.Process, limit: int) -> tuple[bytes, bytes, bool]:
    """The helper's stdout (at most ``limit`` bytes and a chunk: ``overflow`` and a kill past
    it) and the tail of its stderr, once it has exited."""
    assert process.stdout is not None
    assert process.stderr is not None
    stdout, stderr = process.stdout, process.stderr

    async def read_out() -> tuple[bytes, bool]:
        data = bytearray()
        while chunk := await stdout.read(READ_CHUNK):
            data += chunk
            if len(data) > limit:
                signal_group(process, signal.SIGKILL)
                # Read on to the end, discarding: a pipe whose reading paused with data unread
                # never closes, and Python 3.11's Process.wait() waits for its pipes too.
                while await stdout.read(READ_CHUNK):
                    pass
                return bytes(data), True
        return bytes(data), False

    async def read_err() -> bytes:
        tail = bytearray()
        while chunk := await stderr.read(READ_CHUNK):
            tail = (tail + chunk)[-MAX_ERROR_BYTES:]
        return bytes(tail)

    errors = asyncio.ensure_future(read_err())
    try:
        out, overflow = await read_out()
        err = await errors
    finally:
        errors.cancel()
    await process.wait()
    return out, err, overflow


async def kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the helper's group and reap it."""
    if process.returncode is None:
        signal_group(process, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), KILL_SETTLE)


def ended(returncode: int | None) -> str:
    """How a helper that gave no answer ended: ``was killed by SIGKILL``, ``exited with status 3``
    (the end of a sentence about it)."""
    if returncode is not None and returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def signal_group(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    """Send ``sig`` to the helper's group now (no waiting: usable from a callback)."""
    # The group is the helper's own session; its pid is the group id.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
