"""``bench.scale``'s worker process, seen from outside: its CPU time and memory from ``/proc``,
started and stopped like ``toolcalls worker``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from pathlib import Path

READY_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
_TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid``, all its threads."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def rss_mib(pid: int) -> float:
    """Resident memory of process ``pid``, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class WorkerProcess:
    """``bench.scale_worker`` in a process group of its own."""

    def __init__(self, process: asyncio.subprocess.Process, spawned: float) -> None:
        self.process = process
        self.spawned = spawned
        self.ready_at = spawned
        self.ready_wall = time.time()
        """``ready_at`` on the wall clock (``time.time()``), which other processes share."""
        self.gc_seconds = 0.0
        """CPU seconds of the worker's garbage collector, known once it has stopped."""

    @classmethod
    async def start(
        cls,
        address: str,
        queue: str,
        cache: int,
        workdir: Path,
        profile: Path | None,
        code: Path | None = None,
    ) -> WorkerProcess:
        """Start the worker; with ``code``, the project's packages are imported from that tree
        (a baseline's, see ``bench.scale.baseline_tree``) instead of this one."""
        env = None
        if code is not None:
            env = {**os.environ, "PYTHONPATH": str(code)}
        command = [
            sys.executable,
            "-m",
            "bench.scale_worker",
            "--address",
            address,
            "--task-queue",
            queue,
            "--cache",
            str(cache),
            "--state-dir",
            str(workdir / "state"),
        ]
        if profile is not None:
            command += ["--profile", str(profile)]
        log = (workdir / "worker.log").open("ab")
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                cwd=code,
                env=env,
            )
        finally:
            log.close()
        worker = cls(process, time.perf_counter())
        await worker._wait_ready()
        return worker

    async def _wait_ready(self) -> None:
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(READY_TIMEOUT):
                line = await self.process.stdout.readline()
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            await self.stop()
            raise RuntimeError("the worker did not start; see worker.log in the bench's directory")
        self.ready_at = time.perf_counter()
        self.ready_wall = time.time()

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def rss(self) -> float:
        return rss_mib(self.pid)

    async def stop(self) -> None:
        if self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await self.process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            await self.process.wait()
        assert self.process.stdout is not None
        for line in (await self.process.stdout.read()).decode().splitlines():
            if line.startswith("gc "):
                self.gc_seconds = float(line.split()[1])
