"""What does ``ToolCallWorkflow`` cost over a bare workflow running the same tool activity?

    make bench-overhead
    python -m bench.overhead [--calls N] [--concurrency C ...] [--seconds S]

Starts its own dev server and nine workers in one process and runs ``calculator`` nine ways, each
kind (``local``: pure tools as local activities, ``activities.local_pure_tools = true``, the
default; ``activity``: through a regular activity) four ways:

- ``stock/KIND``: ``ToolCallWorkflow`` with an allowing policy, on the stock path a user's worker
  with ``ToolCallsPlugin`` gets (the SDK's sandbox runner and thread-pool executor; our workflow
  package shared between runs);
- ``fast/KIND``: the same on the opt-in fast path (``[worker] fast_path = true``, the ``toolcalls
  worker`` binary's default: our workflows outside the sandbox, on the worker's event loop);
- ``bare/KIND``: a bare workflow (``bench.baseline``) running the same calculator code as that
  kind of activity with the catalog's options for it, in the sandbox sharing its modules between
  runs, as a user's own workflow runs by default;
- ``bare-unsandboxed/KIND``: the bare workflow outside the sandbox, the harder baseline;

and ``bare+status/local`` (``FLOOR``), the bare local workflow setting ``ToolCallStatus`` when it
ends, printed beside the goals.

Every worker is built the same way (the configuration's cache size and concurrency). Calls are
interleaved so that machine noise hits all modes alike: sequential calls and timed throughput
rounds go in an order where each mode follows each other mode equally often, at the same points of
the run on average (``balanced``), and after each round the dev server is let go idle before the
next. Prints latency percentiles of the sequential calls, steady-state throughput at each
concurrency, history events and workflow tasks per call, each path's ratios to each bare workflow,
and each ratio the goals name against its goal (``bench.overhead_report.GOALS``), met or not.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from bench import finish
from bench.baseline import BARE_ACTIVITY, BARE_WORKFLOW, BareToolWorkflow
from bench.overhead_report import FLOOR, report
from toolcalls.activities.base import CallContext
from toolcalls.activities.core.calculator import CalculatorArgs, CalculatorResult, MathTools
from toolcalls.worker.config import Config, build_catalog, parse_config
from toolcalls.worker.devserver import temporal_binary
from toolcalls.worker.fast_path import PASSTHROUGH_MODULES, SHARED_PACKAGE
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    SEARCH_ATTRIBUTES,
    ActivityPlan,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ToolCallRequest,
)

TOOL = "calculator"
ARGUMENTS = {"expression": "(18 + 6) / 3"}
EXPECTED = 8
ALLOW = CapabilityPolicy(tools={TOOL: Effect.ALLOW}, default_effect=Effect.ALLOW)
"""The request's policy: allows everything, so the call runs without approval."""
WARMUP_CALLS = 5
SETTLE_SECONDS = 5.0
"""The longest a throughput round waits, after its last call, for the dev server to go idle."""
IDLE_SERVER = 0.05
"""The dev server is idle when it uses less than this share of a core over ``SETTLE_STEP``."""
SETTLE_STEP = 0.2
RAMP = 0.5
"""Seconds at the start of a throughput round that are not counted (the pipeline filling)."""
CALL_TIMEOUT = 60.0
"""Seconds a call may take before the run gives up on it: the workers are overloaded."""
_math = MathTools()


@activity.defn(name=BARE_ACTIVITY)
async def bare_calculator(args: CalculatorArgs) -> CalculatorResult:
    """The calculator tool, called directly: no catalog, digest or policy checks."""
    info = activity.info()
    call = CallContext(
        workflow_id=info.workflow_id or "",
        call_id=info.workflow_id or "",
        idempotency_key=f"{info.workflow_id}:{info.workflow_id}",
        approval=None,
        precondition=None,
    )
    return await _math.calculator(args, call)


@dataclass
class Mode:
    """One way of running the call, its worker's task queue and what was measured."""

    name: str
    tool_call: bool
    """Through ``ToolCallWorkflow``; otherwise through the bare workflow."""
    local: bool
    queue: str
    options: ActivityPlan
    publish: bool = False
    """The bare workflow sets ``ToolCallStatus`` when it ends (``FLOOR``)."""
    sandboxed: bool = True
    """The bare workflow runs in the sandbox, as a user's own workflow does by default."""
    latencies: list[float] = field(default_factory=list)
    throughput: dict[int, float] = field(default_factory=dict)
    spread: dict[int, tuple[float, float]] = field(default_factory=dict)
    """Per concurrency: the slowest and the fastest round's calls per second."""
    cpu: dict[int, tuple[float, float | None]] = field(default_factory=dict)
    """Per concurrency: CPU seconds per call of this process (workers and client) and the server."""
    events: int = 0
    tasks: int = 0

    async def call(self, client: Client, workflow_id: str | None = None) -> float:
        """Run one call to completion; its latency in seconds as the client sees it."""
        workflow_id = workflow_id or f"bench-{uuid.uuid4()}"
        started = time.perf_counter()
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                await self._execute(client, workflow_id)
        except TimeoutError:
            raise RuntimeError(
                f"{self.name}: {workflow_id} gave no result within {CALL_TIMEOUT:g} s"
            ) from None
        return time.perf_counter() - started

    async def _execute(self, client: Client, workflow_id: str) -> None:
        if self.tool_call:
            result = await client.execute_workflow(
                ToolCallWorkflow.run,
                ToolCallRequest(tool=TOOL, arguments=ARGUMENTS, policy=ALLOW),
                id=workflow_id,
                task_queue=self.queue,
            )
            if result.status is not CallStatus.COMPLETED or result.output["result"] != EXPECTED:
                raise RuntimeError(f"{self.name}: call ended {result.status}: {result.error}")
            return
        output = await client.execute_workflow(
            BARE_WORKFLOW,
            args=[ARGUMENTS, self.options, self.publish],
            id=workflow_id,
            task_queue=self.queue,
            result_type=dict,
        )
        if output["result"] != EXPECTED:
            raise RuntimeError(f"{self.name}: call returned {output}")

    def worker(self, client: Client, config: Config) -> Worker:
        if self.tool_call:
            return build_worker(client, config)
        # Everything as ``build_worker`` sets it, except what it serves.
        runner: WorkflowRunner = UnsandboxedWorkflowRunner()
        if self.sandboxed:
            # Shared like the workflows package, so it skips the per-workflow re-import.
            runner = SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules(
                    *PASSTHROUGH_MODULES, SHARED_PACKAGE, "bench.baseline"
                )
            )
        return Worker(
            client,
            task_queue=self.queue,
            workflows=[BareToolWorkflow],
            activities=[bare_calculator],
            workflow_runner=runner,
            graceful_shutdown_timeout=timedelta(seconds=config.worker.graceful_shutdown_seconds),
            max_concurrent_activities=config.worker.max_concurrent_activities,
            max_cached_workflows=config.worker.max_cached_workflows,
        )


@dataclass
class Round:
    """One timed throughput round: calls counted in the window, and CPU spent on all of them."""

    rate: float
    calls: int
    process_cpu: float
    server_cpu: float | None


async def steady_throughput(client: Client, mode: Mode, concurrency: int, seconds: float) -> Round:
    """Calls per second completed by ``concurrency`` callers, after the ramp, for ``seconds``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    window_start, window_end = started + RAMP, started + RAMP + seconds
    counted = total = 0
    cpu, server = time.process_time(), server_cpu()

    async def caller() -> None:
        nonlocal counted, total
        while loop.time() < window_end:
            await mode.call(client)
            total += 1
            if window_start <= loop.time() <= window_end:
                counted += 1

    await asyncio.gather(*(caller() for _ in range(concurrency)))
    # The server's work for the last calls (closing them, their visibility records) is theirs,
    # and must not slow the next round, which is another mode's.
    server_after = await settled_server_cpu()
    return Round(
        rate=counted / seconds,
        calls=total,
        process_cpu=time.process_time() - cpu,
        server_cpu=server_after - server
        if server is not None and server_after is not None
        else None,
    )


async def settled_server_cpu() -> float | None:
    """The dev server's CPU seconds once it is idle (or after ``SETTLE_SECONDS``)."""
    last = server_cpu()
    deadline = time.monotonic() + SETTLE_SECONDS
    while last is not None and time.monotonic() < deadline:
        await asyncio.sleep(SETTLE_STEP)
        now = server_cpu()
        if now is None or now - last < IDLE_SERVER * SETTLE_STEP:
            return now
        last = now
    return last


def server_cpu() -> float | None:
    """CPU seconds used so far by the dev server (a child of this process); ``None`` off Linux."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    used = 0.0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces; fields follow it.
        name, fields = (
            text[text.index("(") + 1 : text.rindex(")")],
            text[text.rindex(")") + 2 :].split(),
        )
        if name == "temporal" and int(fields[1]) == me:
            used += (int(fields[11]) + int(fields[12])) / tick
    return used


async def history_shape(client: Client, mode: Mode) -> tuple[int, int]:
    """History events and workflow tasks of one call."""
    workflow_id = f"bench-{uuid.uuid4()}"
    await mode.call(client, workflow_id)
    events = (await client.get_workflow_handle(workflow_id).fetch_history()).events
    tasks = sum(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in events)
    return len(events), tasks


def balanced(modes: list[Mode]) -> list[Mode]:
    """One cycle of the order the modes run in, sequential calls and throughput rounds alike: the
    pairs of modes (0 1 0 2 0 3 1 2 1 3 2 3 for four), then the same backwards. Every mode runs
    right after every other mode (twice, but for the first and the last, once each way), runs
    ``2 * (len(modes) - 1)`` times in all, and on average at the same point of the cycle, so a
    server that slows as its history grows slows every mode alike. What ran just before a call
    matters: one that follows a call through a regular activity waits about 10 ms longer for its
    first workflow task (the server is still closing the other call), and a fixed rotation gave
    that wait to the same modes every time."""
    pairs = [modes[k] for i, j in itertools.combinations(range(len(modes)), 2) for k in (i, j)]
    return pairs + pairs[::-1]


def make_modes(run_id: str) -> tuple[list[Mode], dict[str, Config]]:
    """Per kind: the stock path, the fast path, the bare workflow in and out of the sandbox; the
    floor after the local ones."""
    modes = []
    configs = {}
    for local in (True, False):
        kind = "local" if local else "activity"
        for way in ("stock", "fast", "bare", "bare-unsandboxed"):
            name = f"{way}/{kind}"
            queue = f"bench-{name.replace('/', '-')}-{run_id}"
            sections = {
                "task_queue": queue,
                "activities": {"local_pure_tools": local},
                "worker": {"fast_path": way == "fast"},
            }
            config = parse_config(sections, "bench")
            options = build_catalog(config).options(TOOL).model_copy(update={"local": local})
            tool_call = way in ("stock", "fast")
            mode = Mode(name, tool_call, local, queue, options, sandboxed=way != "bare-unsandboxed")
            modes.append(mode)
            configs[name] = config
        if local:
            queue = f"bench-floor-local-{run_id}"
            modes.append(Mode(FLOOR, False, True, queue, options, publish=True))
            configs[FLOOR] = config
    return modes, configs


async def run(calls: int, levels: list[int], seconds: float) -> list[Mode]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
    )
    client = env.client
    modes, configs = make_modes(uuid.uuid4().hex[:8])
    workers = [mode.worker(client, configs[mode.name]) for mode in modes]
    try:
        for worker in workers:
            await worker.__aenter__()
        for mode in modes:  # warm up caches, connections, type adapters and the sandbox
            for _ in range(WARMUP_CALLS):
                await mode.call(client)
        for mode in itertools.cycle(balanced(modes)):
            if all(len(m.latencies) >= calls for m in modes):
                break
            if len(mode.latencies) < calls:
                mode.latencies.append(await mode.call(client))
        for level in levels:
            rounds: dict[str, list[Round]] = {mode.name: [] for mode in modes}
            order = balanced(modes)
            for mode in order:
                share = seconds * (len(modes) / len(order))
                rounds[mode.name].append(await steady_throughput(client, mode, level, share))
            for mode in modes:
                done = rounds[mode.name]
                calls_made = sum(r.calls for r in done)
                servers = [r.server_cpu for r in done if r.server_cpu is not None]
                mode.throughput[level] = statistics.mean(r.rate for r in done)
                mode.spread[level] = (min(r.rate for r in done), max(r.rate for r in done))
                mode.cpu[level] = (
                    sum(r.process_cpu for r in done) / calls_made,
                    sum(servers) / calls_made if len(servers) == len(done) else None,
                )
        for mode in modes:
            mode.events, mode.tasks = await history_shape(client, mode)
    finally:
        for worker in workers:
            await worker.__aexit__(None, None, None)
        await env.shutdown()
    return modes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="sequential calls per mode")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 32], help="concurrent calls"
    )
    parser.add_argument(
        "--seconds", type=float, default=16.0, help="throughput time per mode and concurrency"
    )
    args = parser.parse_args()
    if args.calls < 1 or args.seconds <= 0 or min(args.concurrency) < 1:
        parser.error("--calls, --seconds and --concurrency must be positive")

    def measure() -> int:
        modes = asyncio.run(run(args.calls, args.concurrency, args.seconds))
        subject = f"{TOOL} {ARGUMENTS['expression']!r}"
        report(modes, subject, args.calls, args.concurrency, args.seconds)
        return 0

    finish("bench.overhead", measure)


if __name__ == "__main__":
    main()
