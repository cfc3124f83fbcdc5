"""What does the bubblewrap sandbox cost a command? A sandboxed ``true`` against a host ``true``.

    make bench-sandbox
    python -m bench.sandbox [--runs N]

Runs ``/usr/bin/true`` through ``run_process`` (the runner every process tool uses: a new
session, a ledger entry, pipes drained, the group killed and reaped), alternately on the host and
inside the default sandbox (``[processes] backend = "bubblewrap"``: new namespaces, the read-only
system, a private ``/proc``, ``prlimit``), in one run so that machine noise hits both alike, and
prints each one's p50 and p95 and the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.runner import ProcessSpec, run_process
from toolcalls.activities.processes.settings import SandboxSettings


async def measure(runs: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "root"
        root.mkdir()
        ledger = ProcessLedger(Path(scratch) / "ledger")
        host = ProcessSpec(
            argv=["/usr/bin/true"],
            cwd=str(root),
            env={"PATH": "/usr/bin:/bin"},
            timeout_seconds=30,
            max_output_bytes=65_536,
        )
        grant = SandboxSettings().grant(writable=[root], read_only=[])
        sandboxed = host.model_copy(update={"sandbox": grant})
        times: dict[str, list[float]] = {"host": [], "bubblewrap": []}
        for _ in range(runs):
            for name, spec in (("host", host), ("bubblewrap", sandboxed)):
                started = time.perf_counter()
                result = await run_process(spec, ledger=ledger, kill_grace=0.0)
                times[name].append(time.perf_counter() - started)
                if result.exit_code != 0:
                    raise SystemExit(f"{name}: true exited {result.exit_code}: {result.stderr}")
        return times


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    times = asyncio.run(measure(runs))
    print(f"{runs} runs of /usr/bin/true each, interleaved")
    for name, values in times.items():
        print(
            f"{name:>10}: p50 {percentile(values, 0.5) * 1000:6.1f} ms   "
            f"p95 {percentile(values, 0.95) * 1000:6.1f} ms   "
            f"mean {statistics.fmean(values) * 1000:6.1f} ms"
        )
    extra = percentile(times["bubblewrap"], 0.5) - percentile(times["host"], 0.5)
    print(f"the sandbox adds {extra * 1000:.1f} ms at p50")


if __name__ == "__main__":
    main()
