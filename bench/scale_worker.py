"""The worker process of ``bench.scale``: one production-built worker on the bench's queue.

    python -m bench.scale_worker --address HOST:PORT --task-queue Q --cache N [--profile FILE]

Built by ``toolcalls.worker.run.build_worker`` from a configuration that differs from the defaults
only in its task queue, state directory and ``max_cached_workflows``. Prints ``ready`` once it polls
and stops gracefully on SIGTERM, printing ``gc SECONDS``: the CPU time the cyclic garbage collector
took (``gc.callbacks``). With ``--profile``, every thread of the process (the workflow
activations run in a thread pool) is profiled with ``cProfile`` and the merged statistics are
written to ``FILE`` on the way out.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import sys
import threading
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from toolcalls.worker.config import parse_config
from toolcalls.worker.run import build_worker, stop_on_signals


class GcTime:
    """CPU seconds the cyclic garbage collector took, by generation (written to the log)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
            return
        generation = info["generation"]
        self.seconds[generation] += time.thread_time() - self._started
        self.collections[generation] += 1

    def report(self) -> str:
        return "gc: " + ", ".join(
            f"gen{g} {n} collections {s:.2f} s"
            for g, (n, s) in enumerate(zip(self.collections, self.seconds, strict=True))
        )


class ThreadProfiles:
    """One ``cProfile.Profile`` per thread, started on the thread's first call."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        threading.setprofile(self._install)
        self._install()

    def _install(self, *_: Any) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        with self._lock:
            self.profiles.append(profile)
        profile.enable()

    def dump(self, path: Path) -> None:
        threading.setprofile(None)
        stats: pstats.Stats | None = None
        for profile in self.profiles:
            profile.disable()  # this thread's; the others' data is read as it stands
            try:
                stats = pstats.Stats(profile) if stats is None else stats.add(profile)
            except TypeError:  # a thread that recorded nothing
                continue
        if stats is not None:
            stats.dump_stats(str(path))


async def serve(address: str, task_queue: str, cache: int, state_dir: Path) -> None:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    config = parse_config(
        {
            "task_queue": task_queue,
            "state_dir": str(state_dir),
            # The fast path, as the figures in docs/performance.md were measured.
            "worker": {"max_cached_workflows": cache, "fast_path": True},
        },
        "bench",
    )
    worker = build_worker(client, config)
    stop = asyncio.Event()
    stop_on_signals(stop)
    async with worker:
        print("ready", flush=True)
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--cache", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    profiles = ThreadProfiles() if args.profile else None
    collector = GcTime()
    gc.callbacks.append(collector)
    if profiles is not None:
        profiles.start()
    try:
        asyncio.run(serve(args.address, args.task_queue, args.cache, args.state_dir))
    finally:
        print(collector.report(), file=sys.stderr)
        print(f"gc {sum(collector.seconds):.3f}", flush=True)
        if profiles is not None and args.profile is not None:
            profiles.dump(args.profile)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)  # not a normal exit: temporalio/sdk-python issue 300


if __name__ == "__main__":
    main()
