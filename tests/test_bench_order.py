"""The order ``bench.overhead`` runs its modes in: what ran before a call must not favour a mode."""

from __future__ import annotations

import statistics
import subprocess
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from bench.overhead import Mode, balanced, make_modes
from bench.scale import abba, baseline_tree
from toolcalls.workflows.models.call import ActivityPlan

SCALE_BASELINE = "4410f6b"
"""The commit before the scale work (the Makefile's ``SCALE_BASELINE``), from before the one
``toolcalls`` namespace."""

OPTIONS = ActivityPlan(
    task_queue=None,
    start_to_close=timedelta(seconds=5),
    schedule_to_start=timedelta(seconds=60),
    heartbeat=None,
    maximum_attempts=1,
)


def modes(count: int) -> list[Mode]:
    return [Mode(f"m{i}", False, True, f"q{i}", OPTIONS) for i in range(count)]


@pytest.mark.parametrize("count", [2, 3, 4, 5, 6])
def test_every_mode_follows_every_other_and_runs_as_often_and_as_early(count: int) -> None:
    given = modes(count)
    order = [given.index(mode) for mode in balanced(given)]
    runs = Counter(order)
    assert runs == dict.fromkeys(range(count), 2 * (count - 1))
    # Cyclically, as the benchmark repeats the cycle: each ordered pair of different modes.
    followed = Counter(zip(order, order[1:] + order[:1], strict=True))
    for before in range(count):
        for after in range(count):
            if before != after:
                assert followed[before, after] in (1, 2), (before, after)
    # Only the turns back at either end repeat a mode: the first and the last, once each.
    assert sum(n for (a, b), n in followed.items() if a == b) == 2
    positions = {i: statistics.mean(p for p, m in enumerate(order) if m == i) for i in runs}
    assert len(set(positions.values())) == 1, positions


def test_the_benchmark_compares_both_paths_with_both_bare_workflows_and_the_floor() -> None:
    built, configs = make_modes("t")
    names = [mode.name for mode in built]
    assert names == [
        "stock/local",
        "fast/local",
        "bare/local",
        "bare-unsandboxed/local",
        "bare+status/local",
        "stock/activity",
        "fast/activity",
        "bare/activity",
        "bare-unsandboxed/activity",
    ]
    by_name = dict(zip(names, built, strict=True))
    floor = by_name["bare+status/local"]
    assert floor.publish
    assert floor.local
    assert floor.sandboxed
    assert not floor.tool_call
    assert len({mode.queue for mode in built}) == len(names)
    assert set(configs) == set(names)
    for kind in ("local", "activity"):
        assert configs[f"fast/{kind}"].worker.fast_path is True
        assert configs[f"stock/{kind}"].worker.fast_path is False
        assert by_name[f"stock/{kind}"].tool_call
        assert by_name[f"bare/{kind}"].sandboxed
        assert not by_name[f"bare-unsandboxed/{kind}"].sandboxed
        assert not by_name[f"bare-unsandboxed/{kind}"].tool_call


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_the_scale_baseline_takes_turns_with_this_code_and_starts_as_early(rounds: int) -> None:
    order = abba(rounds)
    assert len(order) == 2 * rounds
    assert order.count(True) == order.count(False) == rounds
    assert order[:4] == [True, False, False, True][: len(order)]
    # On average neither side runs earlier in the run than the other (exactly so for even rounds).
    base = statistics.mean(i for i, on in enumerate(order) if on)
    now = statistics.mean(i for i, on in enumerate(order) if not on)
    assert abs(base - now) <= (1 if rounds % 2 else 0)


def test_the_baseline_tree_is_the_commit_with_this_scale_worker_and_approver(
    tmp_path: Path,
) -> None:
    root = Path(__file__).resolve().parent.parent
    tree = baseline_tree("HEAD", tmp_path)

    def committed(path: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(root), "show", f"HEAD:{path}"], check=True, capture_output=True
        ).stdout

    workflow = "workflows/call/tool_call.py"
    assert (tree / workflow).read_bytes() == committed(workflow)
    assert (tree / "worker" / "plugin.py").read_bytes() == committed("worker/plugin.py")
    # The scale worker and approver are this tree's, whatever the commit had (the baseline had
    # neither); the approver imports the commit's client.
    for script in ("scale_worker.py", "scale_approve.py"):
        here = root / "bench" / script
        assert (tree / "bench" / script).read_bytes() == here.read_bytes()


def test_a_baseline_from_before_the_namespace_runs_the_scripts_with_bare_imports(
    tmp_path: Path,
) -> None:
    tree = baseline_tree(SCALE_BASELINE, tmp_path)
    assert not (tree / "toolcalls").exists()
    for script in ("scale_worker.py", "scale_approve.py"):
        text = (tree / "bench" / script).read_text(encoding="utf-8")
        assert "from toolcalls." not in text
    assert "from worker.run import build_worker" in (tree / "bench" / "scale_worker.py").read_text()
    assert "from workflows import CallStatus, ToolCallClient" in (
        tree / "bench" / "scale_approve.py"
    ).read_text(encoding="utf-8")
