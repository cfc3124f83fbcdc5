"""The approver of ``bench.scale``: approves calls through ``ToolCallClient``, in its own process.

    python -m bench.scale_approve --address HOST:PORT --task-queue Q --concurrency K [--await]

Reads the calls' workflow ids from standard input, one a line; once every id has been approved
(``--await``: and its call has ended ``completed``), prints one JSON line: when the approvals
began (``time.time()``), the seconds they took, this process's CPU seconds meanwhile, the
deliveries by kind and (``--await``) the wall-clock time at which each call ended.

A process of its own so that each side of a baseline comparison decides as its own code does:
run with ``PYTHONPATH`` set to the baseline's tree, it imports that tree's ``ToolCallClient``
(``toolcalls.workflows.reach.client``), whose way of delivering a decision (a status query first,
say) is part of what the worker costs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from toolcalls.workflows import CallStatus, ToolCallClient

_T = TypeVar("_T")


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


async def approve_all(address: str, queue: str, concurrency: int, wait: bool) -> dict[str, object]:
    ids = [line.strip() for line in sys.stdin if line.strip()]
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    calls = ToolCallClient(client, task_queue=queue)
    deliveries: Counter[str] = Counter()
    ended: list[float] = []

    async def decide(workflow_id: str) -> None:
        outcome = await calls.approve(workflow_id, approver="bench")
        deliveries[outcome.delivery.value] += 1
        if wait:
            result = await calls.handle(workflow_id).result()
            if result.status is not CallStatus.COMPLETED:
                raise RuntimeError(f"{workflow_id} ended {result.status}: {result.error}")
            ended.append(time.time())

    began, wall, cpu = time.perf_counter(), time.time(), time.process_time()
    await bounded(concurrency, ids, decide)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    return {
        "began": wall,
        "seconds": seconds,
        "client_cpu": cpu,
        "deliveries": deliveries,
        "ended": ended,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--await", dest="wait", action="store_true")
    args = parser.parse_args()
    code = 0
    try:
        run = approve_all(args.address, args.task_queue, args.concurrency, args.wait)
        print(json.dumps(asyncio.run(run)), flush=True)
    except Exception as exc:  # the bench reads the reason from standard error
        print(f"scale_approve: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not a normal exit: temporalio/sdk-python issue 300


if __name__ == "__main__":
    main()
