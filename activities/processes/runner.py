"""Running one host process with bounded time and output, and leaving nothing behind.

Every process starts in a new session (its own process group) with stdin at EOF and an explicit
environment. stdout and stderr are drained concurrently; the combined output kept is capped while
the pipes keep draining. On timeout, cancellation or worker shutdown the whole group gets SIGTERM,
then SIGKILL after a grace period, and is reaped; after a normal exit the group is killed too, so
ordinary descendants (``sleep 100 &``) do not outlive the call. Descendants that start their own
session escape the group: this is host execution, not a sandbox. One that still holds the output
pipes when the call ends neither delays it (past ``DRAIN_AFTER_EXIT``) nor keeps the worker's ends
open: the call owns its pipes and closes them, and a warning names the processes holding them.

Each group is written to the ledger (``ledger``) while it runs, so a worker killed with SIGKILL
leaves nothing a successor cannot kill; the direct child also gets ``PR_SET_PDEATHSIG``.

Checking on a group reads ``/proc``, and the ledger is files: both run off the event loop, which
every activity of the worker shares.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import logging
import os
import shlex
import signal
import time
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from temporalio import activity

from toolcalls.activities.base import ToolResult
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.processes.ledger import ProcessLedger, group_alive
from toolcalls.activities.processes.pipes import (
    COMMAND_SHOWN,
    DRAIN_AFTER_EXIT,
    Output,
    OutputPipes,
    OutputProgress,
    drain,
    finish_drains,
    pipe_holders,
)
from toolcalls.activities.processes.sandbox import SandboxFailed, SandboxGrant, SandboxStatus
from toolcalls.activities.progress import ProgressPublisher, Redactor

log = logging.getLogger(__name__)

BUDGET_MARGIN = 2.0
"""Seconds kept back from the call's remaining budget to report (the kill has its own share)."""
KILL_SETTLE = 1.0
"""After SIGKILL, how long to wait for the group's members to be gone (delivery is asynchronous)."""
_POLL = 0.05

_PR_SET_PDEATHSIG = 1


def usable_budget(budget_left: float, kill_grace: float) -> float:
    """Seconds a process may run when the call has ``budget_left``: its kill and report must fit.

    Negative or zero means there is no time to run anything.
    """
    return budget_left - BUDGET_MARGIN - kill_grace - KILL_SETTLE - DRAIN_AFTER_EXIT


def budget_left() -> float | None:
    """Seconds until the current activity attempt's first deadline (the call's schedule-to-close
    or the attempt's start-to-close), if it has one."""
    info = activity.info()
    ends = []
    if info.schedule_to_close_timeout:
        ends.append(info.current_attempt_scheduled_time + info.schedule_to_close_timeout)
    if info.start_to_close_timeout:
        ends.append(info.started_time + info.start_to_close_timeout)
    if not ends:
        return None
    return (min(ends) - datetime.now(UTC)).total_seconds()


class ProcessSpec(BaseModel):
    """Exactly what runs: shown in approval previews and compared again before running."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: list[str]
    """``argv[0]`` is the resolved executable."""
    cwd: str
    env: dict[str, str]
    timeout_seconds: float
    max_output_bytes: int
    sandbox: SandboxGrant | None = None
    """The bubblewrap sandbox it runs in; ``None`` runs it on the host."""

    def shown(self) -> dict[str, Any]:
        """As previews and preconditions hold it (a host spec without a ``sandbox`` key, as
        before the sandbox existed)."""
        return self.model_dump(mode="json", exclude_none=True)


class ProcessResult(ToolResult):
    """How a process ended; a non-zero exit or a timeout is a result, not a failure."""

    exit_code: int | None
    """``None`` when the process was killed before it exited on its own."""
    stdout: str
    stderr: str
    truncated: bool
    """Output beyond ``max_output_bytes`` (stdout and stderr together) was discarded."""
    timed_out: bool
    canceled: bool
    budget_exceeded: bool
    """The call's remaining budget, shorter than the timeout, ended the process."""
    duration_seconds: float


async def run_process(
    spec: ProcessSpec,
    *,
    ledger: ProcessLedger | None,
    kill_grace: float,
    budget_left: float | None = None,
    heartbeat: Heartbeat | None = None,
    progress: ProgressPublisher | None = None,
) -> ProcessResult:
    """Run ``spec`` to completion, timeout or cancellation.

    On cancellation the group is killed and ``asyncio.CancelledError`` is raised with the partial
    ``ProcessResult`` (``canceled=True``) as its argument. With ``progress``, the output the
    result keeps is also published line by line as it comes (the environment's values redacted).
    A sandboxed ``spec`` runs under bwrap
    (``sandbox``); one whose sandbox could not start raises ``SandboxFailed``, never runs on the
    host.
    """
    timeout = spec.timeout_seconds
    cut_by_budget = False
    if budget_left is not None:
        usable = usable_budget(budget_left, kill_grace)
        if usable < timeout:
            timeout = max(usable, 0.0)
            cut_by_budget = True
    lines = OutputProgress(progress, spec.env) if progress is not None else None
    output = Output(spec.max_output_bytes, lines, Redactor(spec.env))
    started = time.monotonic()
    pipes = OutputPipes()
    status = SandboxStatus(spec.sandbox) if spec.sandbox is not None else None
    try:
        process, canceled_while_spawning = await spawn(
            *(status.argv(spec.argv, spec.cwd) if status else spec.argv),
            cwd=spec.cwd,
            env=spec.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=pipes.stdout[1],
            stderr=pipes.stderr[1],
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_parent, os.getpid()),
            **(status.options() if status else {}),
        )
    except BaseException as exc:
        pipes.close()
        if status:
            status.close()
            if isinstance(exc, OSError):
                raise status.cannot_run(exc) from None
        raise
    finally:
        pipes.close_write_ends()  # the child has its own copies
        if status:
            status.close_write_end()
    pgid = process.pid
    drains = [
        asyncio.create_task(drain(pipes.stdout[0], output.taker("stdout", heartbeat))),
        asyncio.create_task(drain(pipes.stderr[0], output.taker("stderr", heartbeat))),
    ]
    # Written off the loop; a cancellation while it is written must not lose the entry's removal.
    recorded = asyncio.ensure_future(asyncio.to_thread(ledger.record, pgid)) if ledger else None
    timed_out = canceled = False
    try:
        try:
            if canceled_while_spawning:
                raise asyncio.CancelledError
            if recorded is not None:
                await asyncio.shield(recorded)
            await asyncio.wait_for(_exited(process), timeout)
        except TimeoutError:
            timed_out = True
        await _kill_group(process, kill_grace if timed_out else 0.0)
    except asyncio.CancelledError:
        canceled = True
        await asyncio.shield(_kill_group(process, kill_grace))
    except BaseException:
        # Anything else (the ledger's write failing, say) still leaves no process behind.
        await asyncio.shield(_kill_group(process, 0.0))
        raise
    finally:
        held = await finish_drains(drains)
        pipes.close()
        if lines is not None:
            lines.end()
        if held:
            await _warn_escaped(spec, pgid, pipes.inodes)
        if ledger is not None and recorded is not None:
            await asyncio.gather(recorded, return_exceptions=True)
            if not await asyncio.to_thread(group_alive, pgid):
                await asyncio.to_thread(ledger.forget, pgid)
        started_inside = status.command_ran() if status else True
        if status:
            status.close()
    exited_alone = not (timed_out or canceled)
    if exited_alone and not started_inside:
        raise SandboxFailed.from_stderr(output.text("stderr"), process.returncode)
    result = ProcessResult(
        exit_code=process.returncode if exited_alone else None,
        stdout=output.text("stdout"),
        stderr=output.text("stderr"),
        truncated=output.truncated,
        timed_out=timed_out,
        canceled=canceled,
        budget_exceeded=timed_out and cut_by_budget,
        duration_seconds=round(time.monotonic() - started, 3),
    )
    if canceled:
        raise asyncio.CancelledError(result)
    return result


async def spawn(*argv: str, **options: Any) -> tuple[asyncio.subprocess.Process, bool]:
    """Start a child (``create_subprocess_exec``) and whether a cancellation came meanwhile.

    A cancellation while the child is being created must not lose it: the creation finishes
    (shielded), and the caller handles the cancellation like any other, once it can kill.
    """
    started = asyncio.ensure_future(asyncio.create_subprocess_exec(*argv, **options))
    try:
        return await asyncio.shield(started), False
    except asyncio.CancelledError:
        return await started, True


async def _exited(process: asyncio.subprocess.Process) -> None:
    """Wait for the child itself to exit.

    ``Process.wait()`` (Python 3.11) also waits for the pipes to close, which a descendant still
    holding them (``sleep 100 &``) would delay until the timeout.
    """
    pause = 0.001
    while process.returncode is None:
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.05)


async def _warn_escaped(spec: ProcessSpec, pgid: int, inodes: set[int]) -> None:
    """Log the processes outside the group that still held the call's output pipes."""
    holders = await asyncio.to_thread(pipe_holders, inodes)
    shown = ", ".join(f"pid {pid} ({command})" for pid, command in holders)
    log.warning(
        "%s (process group %d): processes that left the group held its stdout or stderr when "
        "the call ended; the call closed its ends of the pipes and did not kill them: %s",
        shlex.join(spec.argv)[:COMMAND_SHOWN],
        pgid,
        shown or "none is left now",
    )


async def _kill_group(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the group (skipped with no grace), SIGKILL what is left, reap the child, and wait
    (briefly) until no member of the group is left running."""
    pgid = process.pid
    if grace > 0 and _signal_group(pgid, signal.SIGTERM):
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and await asyncio.to_thread(group_alive, pgid):
            await asyncio.sleep(_POLL)
    _signal_group(pgid, signal.SIGKILL)
    await _exited(process)
    deadline = time.monotonic() + KILL_SETTLE
    while time.monotonic() < deadline and await asyncio.to_thread(group_alive, pgid):
        await asyncio.sleep(0.01)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


# Looked up once in the worker: the child of a multithreaded process must not run the dynamic
# loader (or anything else that takes a lock) between fork and exec. Linux only.
_prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: get SIGKILL when the worker dies, however it dies.

    If the worker died before the call took effect, the child is already orphaned and would never
    get the signal, so it kills itself.
    """
    if _prctl is None:
        return
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
