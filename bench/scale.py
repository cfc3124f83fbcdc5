"""How do approval waits scale: N calls waiting at once on one worker and one dev server?

    make bench-scale
    python -m bench.scale [--calls N ...] [--cache C] [--concurrency K] [--start-concurrency S]
                          [--keep F] [--profile DIR]

For each N, on a fresh dev server with a SQLite file (``temporal server start-dev
--db-filename``, started by ``worker.devserver.DevServer``) and one worker process
(``bench.scale_worker``: ``worker.run.build_worker`` with ``max_cached_workflows`` C, smaller
than N), it starts N ``calculator`` calls whose request policy requires approval, S at a time,
and measures:

- the time from the first start to all N waiting (the ``status`` search attribute), and the
  worker's CPU per call and resident memory (``/proc/PID/stat`` and ``status``) once they wait;
- listing every pending call through ``ToolCallClient.pending_page``, 100 and 1,000 a page;
- approving all but a fraction F of them, K at a time, through ``ToolCallClient.approve``:
  approvals per second and the worker's CPU per approved call, up to the call's end;
- a restart: the worker stops, a new one (same cache) starts, and the rest are approved, K at a
  time: how long after the new worker is ready the first and the last of them have ended.

The worker runs in its own process so that its CPU and memory are its own: the bench's client
and the dev server are measured apart (the server's CPU is shown beside the worker's). Prints a
table per N and, for two or more N, the growth of each figure from the smallest to the largest N
against linear growth, flagging what grows faster.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import os
import platform
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from worker.devserver import DevServer
from workflows.client import WAITING_CALLS, ToolCallClient
from workflows.models import (
    WORKFLOW_NAME,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ToolCallRequest,
)

TOOL = "calculator"
ARGUMENTS = {"expression": "(18 + 6) / 3"}
NEEDS_APPROVAL = CapabilityPolicy(tools={TOOL: Effect.REQUIRE_APPROVAL})
ALLOW = CapabilityPolicy(tools={TOOL: Effect.ALLOW}, default_effect=Effect.ALLOW)
WARMUP_CALLS = 5
"""Allowed calls run before measuring, so imports and connections are not counted."""
DEFAULT_START_CONCURRENCY = 8
"""Starts in flight at once while putting the N calls into the wait (``--start-concurrency``).

With 64, a SQLite dev server on 2 cores spent itself on the starts at N=10,000 and handed the
worker its tasks 12 times slower (docs/performance.md, "Scale")."""
PAGE_SIZES = (100, 1000)
POLL_SECONDS = 2.0
"""Between counts while waiting for a phase to end: each count reads every call's row, so
polling faster would add server load that grows with N."""
WAIT_LIMIT = 3600.0
"""Seconds any one phase may take before the run gives up."""
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
DEFAULT_CALLS = (1000, 10000)
DEFAULT_CACHE = 500
DEFAULT_CONCURRENCY = 32
DEFAULT_KEEP = 0.1
SUPER_LINEAR = 1.5
"""A figure whose growth, against linear, exceeds this is flagged."""
_TICK = os.sysconf("SC_CLK_TCK")
_T = TypeVar("_T")


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
        self.gc_seconds = 0.0
        """CPU seconds of the worker's garbage collector, known once it has stopped."""

    @classmethod
    async def start(
        cls, address: str, queue: str, cache: int, workdir: Path, profile: Path | None
    ) -> WorkerProcess:
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


@dataclass
class Figures:
    """What one N measured."""

    calls: int
    cache: int
    start_concurrency: int = DEFAULT_START_CONCURRENCY
    to_wait: float = 0.0
    """Seconds from the first start to all N waiting."""
    wait_cpu: float = 0.0
    """Worker CPU seconds spent putting the N calls into the wait."""
    wait_server_cpu: float = 0.0
    rss: float = 0.0
    """Worker MiB resident once all wait."""
    listing: dict[int, tuple[float, int, int, int]] = field(default_factory=dict)
    """Per page size: seconds to list every page, pages, calls listed, the total reported."""
    count_seconds: float = 0.0
    """One visibility count of the waiting calls."""
    approved: int = 0
    approve_seconds: float = 0.0
    """From the first approval sent to the last one answered."""
    approved_done: float = 0.0
    """From the first approval sent to the last approved call ended."""
    approve_cpu: float = 0.0
    """Worker CPU seconds from the first approval to the last approved call ended."""
    approve_server_cpu: float = 0.0
    gc_seconds: float = 0.0
    """The first worker's garbage collection over its life: the wait and the approvals."""
    deliveries: Counter[str] = field(default_factory=Counter)
    restart_ready: float = 0.0
    """Seconds from spawning the new worker to its polling."""
    restart_batch: int = 0
    restart_first: float = 0.0
    """Seconds from the new worker's polling to the first remaining call ended."""
    restart_last: float = 0.0
    restart_cpu: float = 0.0
    restart_deliveries: Counter[str] = field(default_factory=Counter)

    @property
    def ms_per_call_to_wait(self) -> float:
        return self.to_wait / self.calls * 1000

    @property
    def cpu_per_wait(self) -> float:
        return self.wait_cpu / self.calls * 1000

    @property
    def cpu_per_approval(self) -> float:
        return self.approve_cpu / self.approved * 1000 if self.approved else 0.0

    @property
    def cpu_per_call(self) -> float:
        """Worker CPU ms per waited-and-approved call."""
        return self.cpu_per_wait + self.cpu_per_approval

    @property
    def approvals_per_second(self) -> float:
        return self.approved / self.approve_seconds if self.approve_seconds else 0.0


async def bounded(
    concurrency: int, items: Iterable[_T], job: Callable[[_T], Awaitable[None]]
) -> None:
    """Run ``job`` on every item, ``concurrency`` at a time."""
    queue = list(items)
    queue.reverse()

    async def runner() -> None:
        while queue:
            await job(queue.pop())

    await asyncio.gather(*(runner() for _ in range(concurrency)))


async def until(what: str, check: Callable[[], Awaitable[bool]]) -> None:
    """Poll ``check`` until it is true."""
    deadline = time.monotonic() + WAIT_LIMIT
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what} after {WAIT_LIMIT:g} s")
        await asyncio.sleep(POLL_SECONDS)


async def count(client: Client, query: str) -> int:
    return (await client.count_workflows(query)).count


def waiting_query(queue: str) -> str:
    return f'TaskQueue = "{queue}" AND ExecutionStatus = "Running" AND {WAITING_CALLS}'


def completed_query(queue: str) -> str:
    return (
        f'TaskQueue = "{queue}" AND WorkflowType = "{WORKFLOW_NAME}" '
        'AND ExecutionStatus = "Completed"'
    )


async def measure(
    calls_n: int,
    cache: int,
    concurrency: int,
    keep: float,
    profile_dir: Path | None,
    start_concurrency: int = DEFAULT_START_CONCURRENCY,
) -> Figures:
    figures = Figures(calls=calls_n, cache=cache, start_concurrency=start_concurrency)
    # Kept when the run fails, for the server's and the workers' logs.
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        return await _measure_in(figures, workdir, concurrency, keep, profile_dir)
    except BaseException:
        print(f"  N={calls_n}: failed; logs in {workdir}", file=sys.stderr, flush=True)
        raise


async def _measure_in(
    figures: Figures, workdir: Path, concurrency: int, keep: float, profile_dir: Path | None
) -> Figures:
    calls_n, cache = figures.calls, figures.cache
    queue = f"bench-scale-{uuid.uuid4().hex[:8]}"
    server = DevServer(
        workdir / "temporal.db",
        port=free_port(),
        ui_port=None,
        log_file=workdir / "server.log",
    )
    async with server:
        server_pid = server._process.pid if server._process else None
        assert server_pid is not None
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        calls = ToolCallClient(client, task_queue=queue)
        profile = profile_dir / f"worker-{calls_n}.prof" if profile_dir else None
        worker = await WorkerProcess.start(server.address, queue, cache, workdir, profile)
        try:
            await _measure(figures, client, calls, worker, server_pid, concurrency, keep)
            await worker.stop()
            figures.gc_seconds = worker.gc_seconds
            restart_profile = profile_dir / f"restart-{calls_n}.prof" if profile_dir else None
            await _restart(
                figures, client, calls, server, workdir, queue, concurrency, restart_profile
            )
        finally:
            await worker.stop()
    shutil.rmtree(workdir, ignore_errors=True)
    return figures


async def _measure(
    figures: Figures,
    client: Client,
    calls: ToolCallClient,
    worker: WorkerProcess,
    server_pid: int,
    concurrency: int,
    keep: float,
) -> None:
    queue = calls.task_queue
    n = figures.calls
    start_concurrency = figures.start_concurrency
    for _ in range(WARMUP_CALLS):
        result = await calls.call(ToolCallRequest(tool=TOOL, arguments=ARGUMENTS, policy=ALLOW))
        if result.status is not CallStatus.COMPLETED:
            raise RuntimeError(f"warm-up call ended {result.status}: {result.error}")

    ids = [f"scale-{n}-{i:06d}" for i in range(n)]
    request = ToolCallRequest(tool=TOOL, arguments=ARGUMENTS, policy=NEEDS_APPROVAL)

    async def start(workflow_id: str) -> None:
        await calls.start(request, workflow_id=workflow_id)

    cpu, server_cpu, started = worker.cpu(), cpu_seconds(server_pid), time.perf_counter()
    await bounded(start_concurrency, ids, start)
    await until(f"{n} calls waiting", lambda: _at_least(client, waiting_query(queue), n))
    figures.to_wait = time.perf_counter() - started
    figures.wait_cpu = worker.cpu() - cpu
    figures.wait_server_cpu = cpu_seconds(server_pid) - server_cpu
    figures.rss = worker.rss()
    print(
        f"  N={n}: all waiting after {figures.to_wait:.1f} s; worker CPU "
        f"{figures.cpu_per_wait:.2f} ms per call, RSS {figures.rss:.0f} MiB; server CPU "
        f"{figures.wait_server_cpu / n * 1000:.2f} ms per call",
        flush=True,
    )

    began = time.perf_counter()
    await count(client, waiting_query(queue))
    figures.count_seconds = time.perf_counter() - began
    for size in PAGE_SIZES:
        began = time.perf_counter()
        token: str | None = None
        pages = listed = total = 0
        while True:
            page = await calls.pending_page(page_size=size, page_token=token)
            pages += 1
            listed += len(page.calls)
            total = page.total
            token = page.next_page_token
            if token is None:
                break
        figures.listing[size] = (time.perf_counter() - began, pages, listed, total)
        print(
            f"  N={n}: listed {listed} in {pages} pages of {size} in "
            f"{figures.listing[size][0]:.2f} s, total {total}",
            flush=True,
        )

    kept = max(1, round(n * keep))
    approve = ids[: n - kept]
    figures.approved = len(approve)

    async def decide(workflow_id: str) -> None:
        outcome = await calls.approve(workflow_id, approver="bench")
        figures.deliveries[outcome.delivery.value] += 1

    done_before = await count(client, completed_query(queue))
    cpu, server_cpu, began = worker.cpu(), cpu_seconds(server_pid), time.perf_counter()
    await bounded(concurrency, approve, decide)
    figures.approve_seconds = time.perf_counter() - began
    target = done_before + len(approve)
    await until(
        f"{len(approve)} approved calls ended",
        lambda: _at_least(client, completed_query(queue), target),
    )
    figures.approved_done = time.perf_counter() - began
    figures.approve_cpu = worker.cpu() - cpu
    figures.approve_server_cpu = cpu_seconds(server_pid) - server_cpu
    figures.restart_batch = kept
    print(
        f"  N={n}: approved {len(approve)} in {figures.approve_seconds:.1f} s "
        f"({figures.approvals_per_second:.1f}/s); worker CPU {figures.cpu_per_approval:.2f} ms "
        "per approval",
        flush=True,
    )


async def _restart(
    figures: Figures,
    client: Client,
    calls: ToolCallClient,
    server: DevServer,
    workdir: Path,
    queue: str,
    concurrency: int,
    profile: Path | None,
) -> None:
    n = figures.calls
    rest = [f"scale-{n}-{i:06d}" for i in range(figures.approved, n)]
    worker = await WorkerProcess.start(server.address, queue, figures.cache, workdir, profile)
    try:
        figures.restart_ready = worker.ready_at - worker.spawned
        cpu = worker.cpu()
        ended: list[float] = []

        async def decide(workflow_id: str) -> None:
            outcome = await calls.approve(workflow_id, approver="bench")
            figures.restart_deliveries[outcome.delivery.value] += 1
            result = await calls.handle(workflow_id).result()
            if result.status is not CallStatus.COMPLETED:
                raise RuntimeError(f"{workflow_id} ended {result.status}: {result.error}")
            ended.append(time.perf_counter())

        await bounded(concurrency, rest, decide)
        figures.restart_first = min(ended) - worker.ready_at
        figures.restart_last = max(ended) - worker.ready_at
        figures.restart_cpu = worker.cpu() - cpu
    finally:
        await worker.stop()
    print(f"  N={n}: restart served {len(rest)} in {figures.restart_last:.1f} s", flush=True)


async def _at_least(client: Client, query: str, n: int) -> bool:
    return await count(client, query) >= n


@dataclass(frozen=True)
class Row:
    name: str
    value: Callable[[Figures], float]
    fmt: str
    linear: bool
    """Grows with N when it scales linearly (a total); otherwise it should stay flat."""


def rows() -> list[Row]:
    out = [
        Row("to all waiting, s", lambda f: f.to_wait, ".1f", True),
        Row("to all waiting, ms per call", lambda f: f.ms_per_call_to_wait, ".2f", False),
        Row("worker CPU to wait, ms per call", lambda f: f.cpu_per_wait, ".2f", False),
        Row(
            "server CPU to wait, ms per call",
            lambda f: f.wait_server_cpu / f.calls * 1000,
            ".2f",
            False,
        ),
        Row("worker RSS once all wait, MiB", lambda f: f.rss, ".0f", False),
    ]
    for size in PAGE_SIZES:
        out += listing_rows(size)
    out += [
        Row("one count of the waiting calls, ms", lambda f: f.count_seconds * 1000, ".1f", False),
        Row("approvals/s at K concurrent", lambda f: f.approvals_per_second, ".1f", False),
        Row(
            "approved: ms to last ended, per call",
            lambda f: f.approved_done / f.approved * 1000,
            ".2f",
            False,
        ),
        Row("worker CPU per approval, ms", lambda f: f.cpu_per_approval, ".2f", False),
        Row(
            "server CPU per approval, ms",
            lambda f: f.approve_server_cpu / f.approved * 1000,
            ".2f",
            False,
        ),
        Row("worker CPU per waited+approved call, ms", lambda f: f.cpu_per_call, ".2f", False),
        Row(
            "worker GC per call, ms (wait and approval)",
            lambda f: f.gc_seconds / f.calls * 1000,
            ".2f",
            False,
        ),
        Row("restart: new worker ready, s", lambda f: f.restart_ready, ".2f", False),
        Row("restart: first of batch ended, s", lambda f: f.restart_first, ".2f", False),
        Row("restart: last of batch ended, s", lambda f: f.restart_last, ".1f", True),
        Row(
            "restart: worker CPU per call, ms",
            lambda f: f.restart_cpu / f.restart_batch * 1000,
            ".2f",
            False,
        ),
    ]
    return out


def listing_rows(size: int) -> list[Row]:
    def seconds(f: Figures) -> float:
        return f.listing[size][0]

    def per_page(f: Figures) -> float:
        return f.listing[size][0] / f.listing[size][1] * 1000

    def total(f: Figures) -> float:
        return f.listing[size][3]

    return [
        Row(f"list all, {size}/page, s", seconds, ".2f", True),
        Row(f"list all, {size}/page, ms per page", per_page, ".1f", False),
        Row(f"list all, {size}/page, total reported", total, ".0f", True),
    ]


def report(results: list[Figures], concurrency: int) -> None:
    print(
        f"{TOOL} calls needing approval; worker cache {results[0].cache}, approvals "
        f"{concurrency} at a time (K), SQLite dev server"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, temporalio {importlib.metadata.version('temporalio')}"
    )
    table = rows()
    header = "".join(f"{f'N={f.calls}':>12}" for f in results)
    growth = len(results) > 1
    print(f"{'figure':<44}{header}{'growth':>10}" if growth else f"{'figure':<44}{header}")
    small, large = results[0], results[-1]
    scale = large.calls / small.calls
    flagged = []
    for row in table:
        cells = "".join(f"{format(row.value(f), row.fmt):>12}" for f in results)
        line = f"{row.name:<44}{cells}"
        if growth:
            before, after = row.value(small), row.value(large)
            ratio = after / before if before else float("inf")
            expected = scale if row.linear else 1.0
            # A rate falls as its cost per call grows.
            against = 1 / ratio if row.name.startswith("approvals/s") and ratio else ratio
            mark = ""
            if against / expected > SUPER_LINEAR:
                mark = "  super-linear"
                flagged.append(row.name)
            line += f"{ratio:>9.2f}x{mark}"
        print(line)
    for f in results:
        deliveries = ", ".join(f"{k} {v}" for k, v in sorted(f.deliveries.items()))
        restarted = ", ".join(f"{k} {v}" for k, v in sorted(f.restart_deliveries.items()))
        print(
            f"N={f.calls}: approvals {deliveries}; after the restart ({f.restart_batch} calls) "
            f"{restarted}; listed {', '.join(str(f.listing[s][2]) for s in PAGE_SIZES)}"
        )
    if growth:
        print(
            f"growth: N={large.calls} over N={small.calls} ({scale:g}x calls); linear is "
            f"{scale:g}x for totals and 1x for the rest; "
            + (f"super-linear: {', '.join(flagged)}" if flagged else "nothing super-linear")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=list(DEFAULT_CALLS))
    parser.add_argument("--cache", type=int, default=DEFAULT_CACHE, help="max_cached_workflows")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument(
        "--start-concurrency",
        type=int,
        default=DEFAULT_START_CONCURRENCY,
        help="starts in flight at once",
    )
    parser.add_argument("--keep", type=float, default=DEFAULT_KEEP, help="fraction for the restart")
    parser.add_argument("--profile", type=Path, help="write the workers' cProfile data here")
    args = parser.parse_args()
    if min(args.calls) < 2 or min(args.concurrency, args.start_concurrency) < 1:
        parser.error("--calls must be at least 2, the concurrencies positive")
    if not 0 < args.keep < 1:
        parser.error("--keep must be in (0, 1)")
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    status = 0
    try:
        results = []
        for n in sorted(args.calls):
            print(f"N={n}: starting", flush=True)
            results.append(
                asyncio.run(
                    measure(
                        n,
                        args.cache,
                        args.concurrency,
                        args.keep,
                        args.profile,
                        args.start_concurrency,
                    )
                )
            )
            if len(results) < len(args.calls):
                report(results[-1:], args.concurrency)  # in case a larger N fails
        report(results, args.concurrency)
    except RuntimeError as exc:
        print(f"bench.scale: {exc}", file=sys.stderr)
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # not a normal exit: temporalio/sdk-python issue 300


if __name__ == "__main__":
    main()
