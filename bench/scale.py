"""How do approval waits scale: N calls waiting at once on one worker and one dev server?

    make bench-scale
    python -m bench.scale [--calls N ...] [--cache C] [--concurrency K] [--start-concurrency S]
                          [--keep F] [--profile DIR] [--baseline REV [--baseline-rounds R]]

For each N, on a fresh dev server with a SQLite file (``temporal server start-dev
--db-filename``, started by ``toolcalls.worker.devserver.DevServer``) and one worker process
(``bench.scale_worker``: ``toolcalls.worker.run.build_worker`` with ``max_cached_workflows`` C,
smaller than N), it starts N ``calculator`` calls whose request policy requires approval, S at a
time, and measures:

- the time from the first start to all N waiting (the ``status`` search attribute), and the
  worker's CPU per call and resident memory (``/proc/PID/stat`` and ``status``) once they wait;
- listing every pending call through ``ToolCallClient.pending_page``, 100 and 1,000 a page;
- approving all but a fraction F of them, K at a time, through ``ToolCallClient.approve`` in a
  process of its own (``bench.scale_approve``): approvals per second and the worker's CPU per
  approved call, up to the call's end;
- a restart: the worker stops, a new one (same cache) starts, and the rest are approved, K at a
  time: how long after the new worker is ready the first and the last of them have ended.

The worker runs in its own process so that its CPU and memory are its own: the bench's client
and the dev server are measured apart (the server's CPU is shown beside the worker's). Prints a
table per N and, for two or more N, the growth of each figure from the smallest to the largest N
against linear growth, flagging what grows faster. With ``--baseline REV`` it first measures the
smallest N the same way with the worker, and the client that approves, running the project as
it was at commit REV (``make bench-scale``: the commit before the scale work; how a client
delivers a decision is part of what the worker costs), in turns with this code
(``--baseline-rounds`` runs each, in the order B N N B), and prints the worker's CPU figures of
both and the goal on the CPU per waited-and-approved call (``bench.scale_report.CPU_GOAL``) over
the means, met or not.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from bench import finish
from bench.scale_approve import bounded
from bench.scale_process import WorkerProcess, cpu_seconds, free_port
from bench.scale_report import (
    DEFAULT_START_CONCURRENCY,
    PAGE_SIZES,
    TOOL,
    Figures,
    report,
    report_goal,
)
from toolcalls.worker.devserver import DevServer
from toolcalls.workflows.models.call import (
    WORKFLOW_NAME,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ToolCallRequest,
)
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.reach.pending import WAITING_CALLS

ARGUMENTS = {"expression": "(18 + 6) / 3"}
NEEDS_APPROVAL = CapabilityPolicy(tools={TOOL: Effect.REQUIRE_APPROVAL})
ALLOW = CapabilityPolicy(tools={TOOL: Effect.ALLOW}, default_effect=Effect.ALLOW)
WARMUP_CALLS = 5
"""Allowed calls run before measuring, so imports and connections are not counted."""
POLL_SECONDS = 2.0
"""Between counts while waiting for a phase to end: each count reads every call's row, so
polling faster would add server load that grows with N."""
WAIT_LIMIT = 3600.0
"""Seconds any one phase may take before the run gives up."""
DEFAULT_CALLS = (1000, 10000)
DEFAULT_CACHE = 500
DEFAULT_CONCURRENCY = 32
DEFAULT_KEEP = 0.1


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


def baseline_tree(rev: str, into: Path) -> Path:
    """The project as it was at commit ``rev``, under ``into``, with this tree's
    ``bench.scale_worker`` and ``bench.scale_approve`` (the baseline may have neither): what a
    baseline worker runs, and the client that decides on its calls as the baseline's did."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", rev],
        check=True,
        capture_output=True,
    ).stdout
    tree = into / f"baseline-{rev}"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    bench = tree / "bench"
    bench.mkdir(exist_ok=True)
    (bench / "__init__.py").touch()
    for script in ("scale_worker.py", "scale_approve.py"):
        text = (root / "bench" / script).read_text(encoding="utf-8")
        if not (tree / "toolcalls" / "__init__.py").exists():
            # A baseline from before the one ``toolcalls`` namespace imports its packages bare.
            text = re.sub(r"^from toolcalls\.", "from ", text, flags=re.MULTILINE)
        (bench / script).write_text(text, encoding="utf-8")
    return tree


async def measure(
    calls_n: int,
    cache: int,
    concurrency: int,
    keep: float,
    profile_dir: Path | None,
    start_concurrency: int = DEFAULT_START_CONCURRENCY,
    code: Path | None = None,
) -> Figures:
    """One N; with ``code``, the worker runs the project from that tree (``baseline_tree``)."""
    figures = Figures(calls=calls_n, cache=cache, start_concurrency=start_concurrency)
    # Kept when the run fails, for the server's and the workers' logs.
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        return await _measure_in(figures, workdir, concurrency, keep, profile_dir, code)
    except BaseException:
        print(f"  N={calls_n}: failed; logs in {workdir}", file=sys.stderr, flush=True)
        raise


async def _measure_in(
    figures: Figures,
    workdir: Path,
    concurrency: int,
    keep: float,
    profile_dir: Path | None,
    code: Path | None,
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
        server_pid = server.pid
        assert server_pid is not None
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        calls = ToolCallClient(client, task_queue=queue)
        profile = profile_dir / f"worker-{calls_n}.prof" if profile_dir else None
        worker = await WorkerProcess.start(server.address, queue, cache, workdir, profile, code)
        try:
            await _measure(
                figures, client, calls, worker, server_pid, concurrency, keep, server.address, code
            )
            await worker.stop()
            figures.gc_seconds = worker.gc_seconds
            restart_profile = profile_dir / f"restart-{calls_n}.prof" if profile_dir else None
            await _restart(figures, server, workdir, queue, concurrency, restart_profile, code)
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
    address: str,
    code: Path | None,
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

    done_before = await count(client, completed_query(queue))
    cpu, server_cpu = worker.cpu(), cpu_seconds(server_pid)
    approved = await approve_in_process(address, queue, approve, concurrency, code)
    figures.approve_seconds = approved["seconds"]
    figures.approve_client_cpu = approved["client_cpu"]
    figures.deliveries.update(approved["deliveries"])
    target = done_before + len(approve)
    await until(
        f"{len(approve)} approved calls ended",
        lambda: _at_least(client, completed_query(queue), target),
    )
    figures.approved_done = time.time() - approved["began"]
    figures.approve_cpu = worker.cpu() - cpu
    figures.approve_server_cpu = cpu_seconds(server_pid) - server_cpu
    figures.restart_batch = kept
    print(
        f"  N={n}: approved {len(approve)} in {figures.approve_seconds:.1f} s "
        f"({figures.approvals_per_second:.1f}/s); worker CPU {figures.cpu_per_approval:.2f} ms "
        f"per approval; {dict(sorted(figures.deliveries.items()))}",
        flush=True,
    )


async def _restart(
    figures: Figures,
    server: DevServer,
    workdir: Path,
    queue: str,
    concurrency: int,
    profile: Path | None,
    code: Path | None,
) -> None:
    n = figures.calls
    rest = [f"scale-{n}-{i:06d}" for i in range(figures.approved, n)]
    worker = await WorkerProcess.start(server.address, queue, figures.cache, workdir, profile, code)
    try:
        figures.restart_ready = worker.ready_at - worker.spawned
        cpu = worker.cpu()
        approved = await approve_in_process(server.address, queue, rest, concurrency, code, True)
        figures.restart_deliveries.update(approved["deliveries"])
        figures.restart_first = min(approved["ended"]) - worker.ready_wall
        figures.restart_last = max(approved["ended"]) - worker.ready_wall
        figures.restart_cpu = worker.cpu() - cpu
    finally:
        await worker.stop()
    print(f"  N={n}: restart served {len(rest)} in {figures.restart_last:.1f} s", flush=True)


async def approve_in_process(
    address: str,
    queue: str,
    ids: list[str],
    concurrency: int,
    code: Path | None,
    wait: bool = False,
) -> dict[str, Any]:
    """Approve ``ids`` through ``bench.scale_approve`` (with ``code``, that tree's client), K at a
    time; with ``wait``, each also awaited to its end. Its figures (``scale_approve``)."""
    env = {**os.environ, "PYTHONPATH": str(code)} if code is not None else None
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.scale_approve",
        *("--address", address, "--task-queue", queue, "--concurrency", str(concurrency)),
        *(["--await"] if wait else []),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=code,
        env=env,
    )
    out, err = await process.communicate("\n".join(ids).encode())
    if process.returncode != 0:
        raise RuntimeError(f"the approver failed ({process.returncode}): {err.decode()[-2000:]}")
    figures: dict[str, Any] = json.loads(out)
    return figures


async def _at_least(client: Client, query: str, n: int) -> bool:
    return await count(client, query) >= n


def abba(rounds: int) -> list[bool]:
    """Which of ``2 * rounds`` runs are the baseline's: B N N B B N N B ..., so that a machine
    that drifts over the run drifts for both alike."""
    return [(i % 4) in (0, 3) for i in range(2 * rounds)]


def _measure_one(
    args: argparse.Namespace, n: int, *, code: Path | None = None, profile: Path | None = None
) -> Figures:
    """One N with the command line's settings (``measure``)."""
    return asyncio.run(
        measure(
            n, args.cache, args.concurrency, args.keep, profile, args.start_concurrency, code=code
        )
    )


def _measure_pairs(args: argparse.Namespace, n: int) -> tuple[list[Figures], list[Figures]]:
    """``--baseline-rounds`` runs of N=``n`` on the baseline and as many on this code, in the
    order ``abba`` gives."""
    baselines: list[Figures] = []
    nows: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-baseline-") as into:
        tree = baseline_tree(args.baseline, Path(into))
        for on_baseline in abba(args.baseline_rounds):
            side = f"the baseline {args.baseline}" if on_baseline else "this code"
            print(f"N={n} on {side}: starting", flush=True)
            figures = _measure_one(args, n, code=tree if on_baseline else None)
            (baselines if on_baseline else nows).append(figures)
    return baselines, nows


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
    parser.add_argument(
        "--baseline", metavar="REV", help="also measure the smallest N on the code of commit REV"
    )
    parser.add_argument(
        "--baseline-rounds",
        type=int,
        default=2,
        help="runs of the smallest N on each side, in the order B N N B",
    )
    args = parser.parse_args()
    if min(args.calls) < 2 or min(args.concurrency, args.start_concurrency) < 1:
        parser.error("--calls must be at least 2, the concurrencies positive")
    if args.baseline_rounds < 1:
        parser.error("--baseline-rounds must be positive")
    if not 0 < args.keep < 1:
        parser.error("--keep must be in (0, 1)")
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)

    def measure_all() -> int:
        baselines: list[Figures] = []
        nows: list[Figures] = []
        if args.baseline:
            baselines, nows = _measure_pairs(args, min(args.calls))
        results = nows[:1]  # the smallest N's table shows this code's first run
        for n in sorted(args.calls)[len(results) :]:
            print(f"N={n}: starting", flush=True)
            results.append(_measure_one(args, n, profile=args.profile))
            if len(results) < len(args.calls):
                report(results[-1:], args.concurrency)  # in case a larger N fails
        report(results, args.concurrency)
        if baselines:
            report_goal(nows, baselines, args.baseline)
        return 0

    finish("bench.scale", measure_all)


if __name__ == "__main__":
    main()
