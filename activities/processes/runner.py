"""Running one host process with bounded time and output, and leaving nothing behind.

Every process starts in a new session (its own process group) with stdin at EOF and an explicit
environment. stdout and stderr are drained concurrently; the combined output kept is capped while
the pipes keep draining. On timeout, cancellation or worker shutdown the whole group gets SIGTERM,
then SIGKILL after a grace period, and is reaped; after a normal exit the group is killed too, so
ordinary descendants (``sleep 100 &``) do not outlive the call. Descendants that start their own
session escape the group: this is host execution, not a sandbox.

A worker killed with SIGKILL cannot clean up, so each group is written to a ledger on disk before
it runs and removed once it is gone; the next worker to start kills whatever the ledger still
lists (``ProcessLedger.reap``). The direct child also gets ``PR_SET_PDEATHSIG``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from activities.base import ToolResult
from activities.heartbeat import Heartbeat

log = logging.getLogger(__name__)

READ_CHUNK = 65_536
TAIL_BYTES = 1_024
"""How much of the latest output each heartbeat carries."""
DRAIN_AFTER_EXIT = 1.0
"""How long pipes may stay open after the group is killed (a descendant in its own session)."""
BUDGET_MARGIN = 2.0
"""Seconds kept back from the call's remaining budget to kill, reap and report."""

_PR_SET_PDEATHSIG = 1


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
    """Process groups this worker has running, one file each, so a successor can kill leftovers."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def record(self, pgid: int) -> None:
        (self.directory / str(pgid)).write_text(_start_time(pgid) or "", encoding="ascii")

    def forget(self, pgid: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.directory / str(pgid)).unlink()

    def reap(self) -> list[int]:
        """Kill the groups a previous worker left running; the ones it killed."""
        killed = []
        for entry in self.directory.iterdir():
            if not entry.name.isdigit():
                continue
            pgid = int(entry.name)
            recorded = entry.read_text(encoding="ascii")
            leader = _start_time(pgid)
            # A live leader must be the one recorded (its pid could have been reused). A dead
            # leader's id cannot be reused while members of its group remain, so any group with
            # that id is still the old one.
            if (leader is None or leader == recorded) and _group_alive(pgid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                    killed.append(pgid)
            entry.unlink()
        if killed:
            log.warning("killed process groups left by a previous worker: %s", killed)
        return killed


class _Output:
    """stdout and stderr, kept up to a shared byte cap while both pipes keep draining."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = {"stdout": bytearray(), "stderr": bytearray()}
        self.seen = {"stdout": 0, "stderr": 0}
        self.tail = bytearray()
        self.truncated = False

    def add(self, channel: str, chunk: bytes) -> None:
        self.seen[channel] += len(chunk)
        room = self.cap - len(self.kept["stdout"]) - len(self.kept["stderr"])
        if len(chunk) > room:
            self.truncated = True
        self.kept[channel] += chunk[: max(room, 0)]
        self.tail = (self.tail + chunk)[-TAIL_BYTES:]

    def text(self, channel: str) -> str:
        return bytes(self.kept[channel]).decode("utf-8", errors="replace")

    def progress(self) -> dict[str, object]:
        return {
            "stdout_bytes": self.seen["stdout"],
            "stderr_bytes": self.seen["stderr"],
            "tail": bytes(self.tail).decode("utf-8", errors="replace"),
        }


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
    cut_by_budget = budget_left is not None and budget_left - BUDGET_MARGIN < timeout
    if cut_by_budget:
        assert budget_left is not None
        timeout = max(budget_left - BUDGET_MARGIN, 0.0)
    output = _Output(spec.max_output_bytes)
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *spec.argv,
        cwd=spec.cwd,
        env=spec.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    pgid = process.pid
    if ledger is not None:
        ledger.record(pgid)
    assert process.stdout is not None
    assert process.stderr is not None
    drains = [
        asyncio.create_task(_drain(process.stdout, "stdout", output, heartbeat)),
        asyncio.create_task(_drain(process.stderr, "stderr", output, heartbeat)),
    ]
    timed_out = canceled = False
    try:
        try:
            await asyncio.wait_for(_exited(process), timeout)
        except TimeoutError:
            timed_out = True
        await _kill_group(process, kill_grace if timed_out else 0.0)
    except asyncio.CancelledError:
        canceled = True
        await asyncio.shield(_kill_group(process, kill_grace))
    finally:
        await _finish_drains(drains)
        if ledger is not None and not _group_alive(pgid):
            ledger.forget(pgid)
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


async def _exited(process: asyncio.subprocess.Process) -> None:
    """Wait for the child itself to exit.

    ``Process.wait()`` (Python 3.11) also waits for the pipes to close, which a descendant still
    holding them (``sleep 100 &``) would delay until the timeout.
    """
    pause = 0.001
    while process.returncode is None:
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.05)


async def _drain(
    stream: asyncio.StreamReader, channel: str, output: _Output, heartbeat: Heartbeat | None
) -> None:
    while chunk := await stream.read(READ_CHUNK):
        output.add(channel, chunk)
        if heartbeat is not None:
            heartbeat.update(**output.progress())


async def _finish_drains(drains: Sequence[asyncio.Task[None]]) -> None:
    """Let the pipes empty, but not forever: a descendant in its own session may hold them."""
    _, pending = await asyncio.wait(drains, timeout=DRAIN_AFTER_EXIT)
    for task in pending:
        task.cancel()
    await asyncio.gather(*drains, return_exceptions=True)


async def _kill_group(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the group (skipped with no grace), SIGKILL what is left, reap the child."""
    pgid = process.pid
    if grace > 0 and _signal_group(pgid, signal.SIGTERM):
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(pgid):
            await asyncio.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    await _exited(process)


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
    return any(_member_state(pid) not in (None, "Z") for pid in _members(pgid))


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


def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL when the worker dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
