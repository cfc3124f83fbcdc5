"""The application's worker: its own workflow and activity, and the deployment's tool calls, on
one task queue.

    python worker.py ADDRESS TASK_QUEUE    # runs until SIGINT or SIGTERM
"""

import asyncio
import os
import signal
import sys

from temporalio.client import Client
from temporalio.worker import Worker

from activities import summarize
from toolcalls import ToolCallsPlugin, load_config
from workflows import MyParent


async def main(address: str, task_queue: str) -> None:
    client = await Client.connect(address)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[MyParent],
        activities=[summarize],
        plugins=[ToolCallsPlugin(load_config("toolcalls.toml"))],
    )
    async with worker:
        print(f"worker ready on {task_queue}", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
    print("worker stopped", flush=True)
    sys.stderr.flush()
    # A process that used a Temporal client can abort at interpreter exit (sdk-python issue 300).
    os._exit(0)
