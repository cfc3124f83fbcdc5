"""Pure tools as local activities or as regular activities: which is faster?

    make bench        (or: python -m bench.local_activities [--calls N] [--concurrency C])

Starts its own dev server and two workers in one process, one with ``local_pure_tools = true`` and
one with ``false``, and runs the same ``calculator`` calls through ``ToolCallWorkflow`` on each,
interleaved so that machine noise hits both alike. Prints latency percentiles, throughput and
history events per call, and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from toolcalls.worker.config import parse_config
from toolcalls.worker.devserver import temporal_binary
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import SEARCH_ATTRIBUTES, CallStatus, ToolCallRequest


@dataclass
class Figures:
    latencies: list[float]
    throughput: float
    events: int


async def one_call(client: Client, queue: str) -> float:
    started = time.perf_counter()
    result = await client.execute_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(tool="calculator", arguments={"expression": "(18 + 6) / 3"}),
        id=f"bench-{uuid.uuid4()}",
        task_queue=queue,
    )
    elapsed = time.perf_counter() - started
    if result.status is not CallStatus.COMPLETED:
        raise RuntimeError(f"benchmark call ended {result.status}: {result.error}")
    return elapsed


async def throughput(client: Client, queue: str, calls: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def gated() -> None:
        async with gate:
            await one_call(client, queue)

    started = time.perf_counter()
    await asyncio.gather(*(gated() for _ in range(calls)))
    return calls / (time.perf_counter() - started)


async def events_per_call(client: Client, queue: str) -> int:
    handle = await client.start_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(tool="calculator", arguments={"expression": "1 + 1"}),
        id=f"bench-{uuid.uuid4()}",
        task_queue=queue,
    )
    await handle.result()
    return len((await handle.fetch_history()).events)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(calls: int, concurrency: int) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
    )
    client = env.client
    queues = {"local": f"bench-local-{uuid.uuid4()}", "regular": f"bench-regular-{uuid.uuid4()}"}
    workers = [
        build_worker(
            client,
            parse_config(
                {"task_queue": queue, "activities": {"local_pure_tools": mode == "local"}}
            ),
        )
        for mode, queue in queues.items()
    ]
    figures: dict[str, Figures] = {}
    try:
        for worker in workers:
            await worker.__aenter__()
        for queue in queues.values():  # warm up caches, connections and the sandbox
            for _ in range(5):
                await one_call(client, queue)
        latencies: dict[str, list[float]] = {mode: [] for mode in queues}
        for _ in range(calls):
            for mode, queue in queues.items():
                latencies[mode].append(await one_call(client, queue))
        for mode, queue in queues.items():
            figures[mode] = Figures(
                latencies=latencies[mode],
                throughput=await throughput(client, queue, calls, concurrency),
                events=await events_per_call(client, queue),
            )
    finally:
        for worker in workers:
            await worker.__aexit__(None, None, None)
        await env.shutdown()
    report(figures, calls, concurrency)


def report(figures: dict[str, Figures], calls: int, concurrency: int) -> None:
    print(
        f"calculator through ToolCallWorkflow: {calls} sequential calls per mode, "
        f"throughput with {concurrency} concurrent"
    )
    print(f"{'mode':<10}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'calls/s':>10}{'events':>8}")
    for mode, f in figures.items():
        print(
            f"{mode:<10}{percentile(f.latencies, 0.5) * 1000:>10.1f}"
            f"{percentile(f.latencies, 0.99) * 1000:>10.1f}"
            f"{statistics.mean(f.latencies) * 1000:>10.1f}"
            f"{f.throughput:>10.1f}{f.events:>8}"
        )
    local, regular = figures["local"], figures["regular"]
    p50 = percentile(local.latencies, 0.5) / percentile(regular.latencies, 0.5)
    print(
        f"local/regular: p50 {p50:.2f}x, "
        f"throughput {local.throughput / regular.throughput:.2f}x, "
        f"events {local.events}/{regular.events}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(run(args.calls, args.concurrency))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
