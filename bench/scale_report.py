"""``bench.scale``'s figures: what one N measured, and the table that compares the Ns."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

TOOL = "calculator"
DEFAULT_START_CONCURRENCY = 8
"""Starts in flight at once while putting the N calls into the wait (``--start-concurrency``).

With 64, a SQLite dev server on 2 cores spent itself on the starts at N=10,000 and handed the
worker its tasks 12 times slower (docs/performance.md, "What a deployment should expect")."""
PAGE_SIZES = (100, 1000)
SUPER_LINEAR = 1.5
"""A figure whose growth, against linear, exceeds this is flagged."""


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
    approve_client_cpu: float = 0.0
    """The approving process's CPU seconds (``bench.scale_approve``) while it approved."""
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
        # A count reads every matching row: it grows with N like a total.
        Row("one count of the waiting calls, ms", lambda f: f.count_seconds * 1000, ".1f", True),
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
        Row(
            "approving client CPU per approval, ms",
            lambda f: f.approve_client_cpu / f.approved * 1000,
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


CPU_GOAL = 1.5
"""The worker CPU per waited-and-approved call the baseline spent, over what the code spends now."""
APPROVALS_GOAL = 88.0
"""Approvals per second at 32 concurrent: twice the most measured when the goal was set (44/s)."""
COMPARED = (
    "worker CPU",
    "restart: worker CPU",
    "approvals/s",
    "server CPU per approval",
    "approving client",
)
"""The rows ``report_goal`` shows for both sides."""


def report_goal(nows: list[Figures], baselines: list[Figures], rev: str) -> None:
    """The worker's CPU figures of each run of this code and of the baseline (the same N, in turns
    in the same run), their means, and the goal on the CPU per waited-and-approved call."""
    n = nows[0].calls
    print(f"N={n}, this code against the baseline {rev}, {len(nows)} runs each, in turns")
    print(f"{'figure':<44}{'baseline':>18}{'now':>18}{'base/now':>10}")
    for row in rows():
        if row.name.startswith(COMPARED):
            before = [row.value(f) for f in baselines]
            now = [row.value(f) for f in nows]
            less = statistics.mean(before) / statistics.mean(now)
            cells = f"{_runs(before, row.fmt):>18}{_runs(now, row.fmt):>18}"
            print(f"{row.name:<44}{cells}{less:>9.2f}x")
    ratio = statistics.mean(f.cpu_per_call for f in baselines) / statistics.mean(
        f.cpu_per_call for f in nows
    )
    result = "met" if ratio >= CPU_GOAL else "not met"
    print("goals (means of the runs)")
    print(
        f"worker CPU per waited+approved call, baseline / now: {ratio:.2f}x, "
        f"goal >= {CPU_GOAL:g}x: {result}"
    )
    rate = statistics.mean(f.approvals_per_second for f in nows)
    result = "met" if rate >= APPROVALS_GOAL else "not met"
    print(f"approvals/s at K concurrent, now: {rate:.1f}, goal >= {APPROVALS_GOAL:g}: {result}")


def _runs(values: list[float], fmt: str) -> str:
    return " ".join(format(v, fmt) for v in values)
