"""What ``bench.overhead`` prints: its tables, each path's ratios to each bare workflow (and to the
floor, ``FLOOR``) and each goal of ``GOALS`` met or not."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.overhead import Mode

GOAL_CONCURRENCY = 32
PATHS = ("stock", "fast")
"""``ToolCallWorkflow`` on the stock path (a user's worker with the plugin) and the fast path."""
BASELINES = ("bare", "bare-unsandboxed")
"""The bare workflow in the sandbox (as a user's own runs) and outside it (the harder one)."""
FLOOR = "bare+status/local"
"""The bare local workflow that also sets one search attribute when it ends: what an allowed pure
call costs at least, with the one write ``ToolCallStatus`` needs (the goals compare against the
plain bare workflow; this one is printed beside them)."""


@dataclass(frozen=True)
class Goal:
    """The most ``ToolCallWorkflow``'s p50 may be, and the least its throughput at
    ``GOAL_CONCURRENCY`` may be, as ratios to the bare workflow's in the same run."""

    p50: float
    throughput: float


GOALS = {
    "local": Goal(p50=1.1, throughput=0.95),
    "activity": Goal(p50=1.05, throughput=0.95),
}
"""By kind: an allowed pure tool as a local activity, an allowed call through a regular one."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(modes: list[Mode], subject: str, calls: int, levels: list[int], seconds: float) -> None:
    """The tables, ``ToolCallWorkflow``'s ratios to the bare workflow and to ``FLOOR``, and each
    goal met or not."""
    print(
        f"{subject}: {calls} sequential calls per mode, interleaved; "
        f"throughput over {seconds:g} s per mode and concurrency"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, temporalio {importlib.metadata.version('temporalio')}"
    )
    top = max(levels)
    rates = "".join(f"{f'calls/s@{c}':>13}" for c in levels)
    print(
        f"{'mode':<27}{'p50 ms':>9}{'p99 ms':>9}{'mean ms':>9}{rates}"
        f"{f'rounds@{top}':>13}{f'cpu ms@{top}':>12}{'server':>8}{'events':>8}{'tasks':>7}"
    )
    for m in modes:
        row = "".join(f"{m.throughput[c]:>13.1f}" for c in levels)
        process, server = m.cpu[top]
        slowest, fastest = m.spread[top]
        print(
            f"{m.name:<27}{percentile(m.latencies, 0.5) * 1000:>9.1f}"
            f"{percentile(m.latencies, 0.99) * 1000:>9.1f}"
            f"{statistics.mean(m.latencies) * 1000:>9.1f}{row}{f'{slowest:.0f}-{fastest:.0f}':>13}"
            f"{process * 1000:>12.1f}{'-' if server is None else f'{server * 1000:.1f}':>8}"
            f"{m.events:>8}{m.tasks:>7}"
        )
    print(
        f"cpu ms@{top}: CPU time per call of this process (workers and client), "
        "server: of the dev server, both while running the calls at that concurrency; "
        f"rounds@{top}: the slowest and the fastest round's calls/s"
    )
    by_name = {m.name: m for m in modes}
    print("ToolCallWorkflow / bare")
    for kind in GOALS:
        for path in PATHS:
            for base in BASELINES:
                tool, bare = by_name[f"{path}/{kind}"], by_name[f"{base}/{kind}"]
                print(f"{path + '/' + kind:<16}/ {base:<18}{ratios(tool, bare, levels)}")
    for path in PATHS:
        floor = ratios(by_name[f"{path}/local"], by_name[FLOOR], levels)
        print(f"{path + '/local':<16}/ {FLOOR:<18}{floor}")
    print("goals")
    print(f"{'path/kind':<16}{'baseline':<18}{'ratio':<16}{'measured':>9}{'goal':>10}  result")
    for name, base, ratio, value, goal in goal_rows(by_name):
        shown = "-" if value is None else f"{value:.2f}x"
        result = "not measured" if value is None else "met" if goal.met(value) else "not met"
        print(f"{name:<16}{base:<18}{ratio:<16}{shown:>9}{goal.text:>10}  {result}")


def ratios(tool: Mode, base: Mode, levels: list[int]) -> str:
    """``tool``'s latency, throughput and events against ``base``'s."""
    p50, p99 = (percentile(tool.latencies, q) / percentile(base.latencies, q) for q in (0.5, 0.99))
    rates = "".join(f", calls/s@{c} {tool.throughput[c] / base.throughput[c]:.2f}x" for c in levels)
    return f"p50 {p50:.2f}x, p99 {p99:.2f}x{rates}, events {tool.events}/{base.events}"


@dataclass(frozen=True)
class Bound:
    """One goal: a ratio at most (``upper``) or at least ``limit``."""

    limit: float
    upper: bool

    @property
    def text(self) -> str:
        return f"{'<=' if self.upper else '>='} {self.limit:g}x"

    def met(self, value: float) -> bool:
        return value <= self.limit if self.upper else value >= self.limit


def goal_rows(by_name: dict[str, Mode]) -> list[tuple[str, str, str, float | None, Bound]]:
    """Each ratio ``GOALS`` names, for each path against each baseline, measured (``None`` if the
    run did not measure it), and its bound."""
    rows: list[tuple[str, str, str, float | None, Bound]] = []
    for kind, goal in GOALS.items():
        for path in PATHS:
            for base in BASELINES:
                name = f"{path}/{kind}"
                tool, bare = by_name[name], by_name[f"{base}/{kind}"]
                p50 = percentile(tool.latencies, 0.5) / percentile(bare.latencies, 0.5)
                rows.append((name, base, "p50", p50, Bound(goal.p50, upper=True)))
                level = GOAL_CONCURRENCY
                rate = (
                    tool.throughput[level] / bare.throughput[level]
                    if level in tool.throughput and level in bare.throughput
                    else None
                )
                bound = Bound(goal.throughput, upper=False)
                rows.append((name, base, f"calls/s@{level}", rate, bound))
    return rows
