"""What does an inline call cost a parent workflow, against running the activity itself?

    make bench-inline
    python -m bench.inline [--calls N]

Starts its own dev server and three workers in one process: the toolcalls deployment (workflow,
``plan`` and the tools, production settings), a worker serving the bare calculator activity
(``bench.overhead.bare_calculator``) on a queue of its own, and the application's worker running
the parent (``bench.inline_parent``), in the sandbox sharing the ``workflows`` package as a
production worker does. The parent makes one ``calculator`` call three ways:

- ``inline``: ``ToolCalls(inline=True)``: one ``plan`` activity on the deployment's queue, which
  runs the pure tool too;
- ``child``: ``ToolCalls()``: a child ``ToolCallWorkflow``;
- ``bare``: the parent runs the calculator code as a regular activity with the catalog's options.

Parents run round-robin, so noise hits every mode alike. Prints latency percentiles as the client
sees the parent, history events of the parent (and of the child), and the inline / bare ratio
against the goal: within 1.1x.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import platform
import statistics
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bench import finish
from bench.inline_parent import BENCH_PARENT, BenchAgentParent, BenchCall
from bench.overhead import ARGUMENTS, EXPECTED, TOOL, bare_calculator
from bench.overhead_report import percentile
from toolcalls.worker.config import build_catalog, parse_config
from toolcalls.worker.devserver import temporal_binary
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.worker.run import build_worker
from toolcalls.workflows.models.call import SEARCH_ATTRIBUTES

GOAL = 1.1
WARMUP_CALLS = 5
CALL_TIMEOUT = 60.0
MODES = ("inline", "child", "bare")


@dataclass
class Mode:
    name: str
    call: BenchCall
    latencies: list[float] = field(default_factory=list)
    events: int = 0
    child_events: int = 0

    async def run(self, client: Client, queue: str, workflow_id: str | None = None) -> float:
        workflow_id = workflow_id or f"bench-{self.name}-{uuid.uuid4()}"
        started = time.perf_counter()
        async with asyncio.timeout(CALL_TIMEOUT):
            output: dict[str, Any] = await client.execute_workflow(
                BENCH_PARENT, self.call, id=workflow_id, task_queue=queue, result_type=dict
            )
        elapsed = time.perf_counter() - started
        if output.get("result") != EXPECTED:
            raise RuntimeError(f"{self.name}: the parent returned {output}")
        return elapsed


async def run(calls: int) -> list[Mode]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
    )
    client = env.client
    run_id = uuid.uuid4().hex[:8]
    deployment, bare, app = (f"bench-{k}-{run_id}" for k in ("deployment", "bare", "app"))
    config = parse_config({"task_queue": deployment}, "bench")
    options = build_catalog(config).options(TOOL).model_copy(update={"task_queue": bare})
    modes = [
        Mode(
            name,
            BenchCall(
                mode=name, deployment=deployment, tool=TOOL, arguments=ARGUMENTS, options=options
            ),
        )
        for name in MODES
    ]
    workers = [
        build_worker(client, config),
        Worker(
            client,
            task_queue=bare,
            activities=[bare_calculator],
            max_concurrent_activities=config.worker.max_concurrent_activities,
        ),
        Worker(
            client,
            task_queue=app,
            workflows=[BenchAgentParent],
            workflow_runner=sandbox_runner(isolate=False),
            graceful_shutdown_timeout=timedelta(seconds=config.worker.graceful_shutdown_seconds),
            max_cached_workflows=config.worker.max_cached_workflows,
        ),
    ]
    try:
        for worker in workers:
            await worker.__aenter__()
        for mode in modes:  # caches, connections, type adapters, the sandbox
            for _ in range(WARMUP_CALLS):
                await mode.run(client, app)
        for turn in range(calls):
            shift = turn % len(modes)
            for mode in modes[shift:] + modes[:shift]:
                mode.latencies.append(await mode.run(client, app))
        for mode in modes:
            parent = f"bench-shape-{mode.name}-{uuid.uuid4()}"
            await mode.run(client, app, parent)
            mode.events = len((await client.get_workflow_handle(parent).fetch_history()).events)
            if mode.name == "child":
                child = client.get_workflow_handle(f"{parent}/tools/call")
                mode.child_events = len((await child.fetch_history()).events)
    finally:
        for worker in reversed(workers):
            await worker.__aexit__(None, None, None)
        await env.shutdown()
    return modes


def report(modes: list[Mode], calls: int) -> bool:
    print(
        f"{TOOL} {ARGUMENTS['expression']!r} from a parent workflow: {calls} parents per mode, "
        "interleaved"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, temporalio {importlib.metadata.version('temporalio')}"
    )
    print(f"{'mode':<8}{'p50 ms':>9}{'p99 ms':>9}{'mean ms':>9}{'events':>8}{'child':>7}")
    for m in modes:
        print(
            f"{m.name:<8}{percentile(m.latencies, 0.5) * 1000:>9.1f}"
            f"{percentile(m.latencies, 0.99) * 1000:>9.1f}"
            f"{statistics.mean(m.latencies) * 1000:>9.1f}{m.events:>8}"
            f"{m.child_events or '-':>7}"
        )
    by_name = {m.name: m for m in modes}
    bare = by_name["bare"]
    met = True
    for name in ("inline", "child"):
        mode = by_name[name]
        ratios = {
            "p50": percentile(mode.latencies, 0.5) / percentile(bare.latencies, 0.5),
            "p99": percentile(mode.latencies, 0.99) / percentile(bare.latencies, 0.99),
            "mean": statistics.mean(mode.latencies) / statistics.mean(bare.latencies),
        }
        shown = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
        if name == "inline":
            met = ratios["p50"] <= GOAL and ratios["mean"] <= GOAL
            print(
                f"inline / bare: {shown} (goal: p50 and mean <= {GOAL}x): "
                f"{'met' if met else 'MISSED'}"
            )
        else:
            print(f"child / bare: {shown} (for comparison)")
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="parents per mode")
    args = parser.parse_args()
    if args.calls < 1:
        parser.error("--calls must be positive")

    def measure() -> int:
        return 0 if report(asyncio.run(run(args.calls)), args.calls) else 1

    finish("bench.inline", measure)


if __name__ == "__main__":
    main()
