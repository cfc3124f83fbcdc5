"""Running one host process with bounded time and output, and leaving nothing behind.

Every process starts in a new session (its own process group) with stdin at EOF and an explicit
environment. stdout and stderr are drained concurrently; the combined output kept is capped while
the pipes keep draining. On timeout, cancellation or worker shutdown the whole group gets SIGTERM,
then SIGKILL after a grace period, and is reaped; after a normal exit the group is killed too, so
ordinary descendants (``sleep 100 &``) do not outlive the call. Descendants that start their own
session escape the group: this is host execution, not a sandbox. One that still holds the output
pipes when the call ends neither delays it (past ``DRAIN_AFTER_EXIT``) nor keeps the worker's ends
open: the call owns its pipes and closes them, and a warning names the processes holding them.

A worker killed with SIGKILL cannot clean up, so each group is written to a ledger on disk as soon
as it runs and removed once it is gone; the next worker to start kills whatever groups the ledger
still lists for workers that are gone (``ProcessLedger.reap``): a live worker sharing the
directory keeps its own. The direct child also gets ``PR_SET_PDEATHSIG``.

Checking on a group reads ``/proc``, and the ledger is files: both run off the event loop, which
every activity of the worker shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import json
import logging
import os
import shlex
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from temporalio import activity

from toolcalls.activities.base import ToolResult
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.processes.pipes import (
    COMMAND_SHOWN,
    DRAIN_AFTER_EXIT,
    Output,
    OutputPipes,
    drain,
    finish_drains,
    pipe_holders,
)

log = logging.getLogger(__name__)

BUDGET_MARGIN = 2.0
"""Seconds kept back from the call's remaining budget to report (the kill has its own share)."""
KILL_SETTLE = 1.0
"""After SIGKILL, how long to wait for the group's members to be gone (delivery is asynchronous)."""
_POLL = 0.05

_PR_SET_PDEATHSIG = 1
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


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


class ProcessLedger:
    """Process groups this worker has running, one file each, so a successor can kill leftovers.

    Each entry names the group's leader (its pid and kernel start time), the worker that started
    it (likewise), and the boot it ran in. Several workers may share one directory: ``reap`` kills
    only the groups of workers that are gone.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def record(self, pgid: int) -> None:
        owner = os.getpid()
        entry = {
            "leader_start": _start_time(pgid),
            "owner": owner,
            "owner_start": _start_time(owner),
            "boot": _boot_id(),
        }
        # Written aside and renamed into place: a worker reaping the directory meanwhile must never
        # read a half-written entry (it would name no owner, and be removed or even acted on).
        partial = self.directory / f".{pgid}.{owner}.tmp"
        partial.write_text(json.dumps(entry), encoding="ascii")
        os.replace(partial, self.directory / str(pgid))

    def forget(self, pgid: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.directory / str(pgid)).unlink()

    def reap(self) -> list[int]:
        """Kill the groups that workers now gone left running; the ones it killed."""
        killed = []
        boot = _boot_id()
        for entry in self.directory.iterdir():
            if not entry.name.isdigit():
                _discard_stale_partial(entry)
                continue
            pgid = int(entry.name)
            try:
                recorded = _read_entry(entry.read_text(encoding="ascii", errors="replace"))
            except FileNotFoundError:
                continue  # another worker sharing the directory reaped it first
            if recorded.get("boot") not in (None, boot):
                entry.unlink(missing_ok=True)  # from before a reboot: those processes are gone
                continue
            owner = recorded.get("owner")
            if isinstance(owner, int) and _start_time(owner) == recorded.get("owner_start"):
                continue  # its worker still runs (it shares this directory): not ours to kill
            leader = _start_time(pgid)
            # A live leader must be the one recorded (its pid could have been reused). A dead
            # leader's id cannot be reused while members of its group remain, so any group with
            # that id is still the old one.
            if (leader is None or leader == recorded.get("leader_start")) and _group_alive(pgid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                    killed.append(pgid)
            entry.unlink(missing_ok=True)
        if killed:
            log.warning("killed process groups left by a previous worker: %s", killed)
        return killed


def _discard_stale_partial(entry: Path) -> None:
    """Remove an entry a worker that is gone was writing (``.<pgid>.<owner>.tmp``) when it died."""
    parts = entry.name.split(".")
    if len(parts) != 4 or parts[0] or parts[3] != "tmp" or not parts[2].isdigit():
        return
    if _start_time(int(parts[2])) is None:
        entry.unlink(missing_ok=True)


def _read_entry(text: str) -> dict[str, Any]:
    """A ledger entry; an unreadable one names no owner and no leader."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


async def run_process(
    spec: ProcessSpec,
    *,
    ledger: ProcessLedger | None,
    kill_grace: float,
    budget_left: float | None = None,
    heartbeat: Heartbeat | None = None,
) -> ProcessResult:
    """Run ``spec`` to completion, timeout or cancellation.

    On cancellation the group is killed and ``asyncio.CancelledError`` is raised with the partial
    ``ProcessResult`` (``canceled=True``) as its argument.
    """
    timeout = spec.timeout_seconds
    cut_by_budget = False
    if budget_left is not None:
        usable = usable_budget(budget_left, kill_grace)
        if usable < timeout:
            timeout = max(usable, 0.0)
            cut_by_budget = True
    output = Output(spec.max_output_bytes)
    started = time.monotonic()
    pipes = OutputPipes()
    try:
        process, canceled_while_spawning = await spawn(
            *spec.argv,
            cwd=spec.cwd,
            env=spec.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=pipes.stdout[1],
            stderr=pipes.stderr[1],
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_parent, os.getpid()),
        )
    except BaseException:
        pipes.close()
        raise
    finally:
        pipes.close_write_ends()  # the child has its own copies
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
        if held:
            await _warn_escaped(spec, pgid, pipes.inodes)
        if ledger is not None and recorded is not None:
            await asyncio.gather(recorded, return_exceptions=True)
            if not await asyncio.to_thread(_group_alive, pgid):
                await asyncio.to_thread(ledger.forget, pgid)
    exited_alone = not (timed_out or canceled)
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
        while time.monotonic() < deadline and await asyncio.to_thread(_group_alive, pgid):
            await asyncio.sleep(_POLL)
    _signal_group(pgid, signal.SIGKILL)
    await _exited(process)
    deadline = time.monotonic() + KILL_SETTLE
    while time.monotonic() < deadline and await asyncio.to_thread(_group_alive, pgid):
        await asyncio.sleep(0.01)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies answer signal 0; a group of only zombies is dead for our purposes.
    return any(_member_state(pid) not in (None, "Z", "X") for pid in _members(pgid))


def _members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _process_group(int(entry)) == pgid:
            members.append(int(entry))
    return members


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name may hold spaces and parentheses: split after its closing one.
    return raw[raw.rindex(")") + 2 :].split()


def _process_group(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[2]) if fields else None


def _member_state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), to tell reused pids apart."""
    fields = _stat_fields(pid)
    return fields[19] if fields else None


def _boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return None


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
