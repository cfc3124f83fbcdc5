"""Replaying a user's own parent workflows: ``toolcalls replay --workflow`` and
``toolcalls.replay_histories``.

The histories are the recorded ``AgentParent`` ones (``tests/histories/parents``), which run calls
as children and inline; ``tests/package/test_user_project.py`` does the same from a user's project
with the installed wheel.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.workflow import NondeterminismError

import toolcalls
from tests.support.parents import AgentParent, ParentInput, ParentOutput
from tests.worker.support import TOOLCALLS, one_line, run

ROOT = Path(__file__).parents[2]
PARENTS = ROOT / "tests" / "histories" / "parents"
CALLS = ROOT / "tests" / "histories"
OFFLINE = "127.0.0.1:1"
"""Where the command would connect if it tried (``TEMPORAL_ADDRESS``): replay needs no server."""


def parent_files() -> list[Path]:
    files = sorted(PARENTS.glob("*.json"))
    assert files
    return files


@workflow.defn(name="AgentParent", sandboxed=False)
class SleepsFirst:
    """A 'new version' of ``AgentParent`` that waits before its first call, unpatched."""

    @workflow.run
    async def run(self, input: ParentInput) -> ParentOutput:
        await workflow.sleep(timedelta(seconds=1))
        raise RuntimeError("unreachable in replay")


def test_replay_with_workflow_replays_parents_beside_calls(tmp_path: Path) -> None:
    files = [*parent_files(), CALLS / "approved.json"]
    done = run(
        [TOOLCALLS, "replay", "--workflow", "tests.support.parents:AgentParent", *map(str, files)],
        tmp_path,
        timeout=60,
        PYTHONPATH=str(ROOT),
        TEMPORAL_ADDRESS=OFFLINE,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert [line.split()[:2] for line in done.stdout.splitlines()] == [
        ["ok", str(file)] for file in files
    ]


def test_replay_without_the_workflow_names_the_history_type(tmp_path: Path) -> None:
    [first, *_] = parent_files()
    done = run([TOOLCALLS, "replay", str(first)], tmp_path, TEMPORAL_ADDRESS=OFFLINE)
    assert done.returncode == 1
    assert done.stdout.startswith(f"failed           {first} (")
    assert done.stdout.rstrip().endswith("a AgentParent history, not ToolCallWorkflow")


def test_replay_finds_the_users_module_in_the_working_directory(tmp_path: Path) -> None:
    # A module of the same name as ours used to have at the top level, in the user's directory.
    (tmp_path / "workflows.py").write_text(
        "from tests.support.parents import AgentParent as MyParent\n", encoding="utf-8"
    )
    [first, *_] = parent_files()
    done = run(
        [TOOLCALLS, "replay", "--workflow", "workflows:MyParent", str(first), "--json"],
        tmp_path,
        PYTHONPATH=str(ROOT),
        TEMPORAL_ADDRESS=OFFLINE,
    )
    assert (done.returncode, done.stderr) == (0, "")
    [report] = json.loads(done.stdout)
    assert (report["verdict"], report["workflow_id"]) == ("ok", "recorded-" + first.stem)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("workflows", "expected MODULE:CLASS, such as workflows:MyParent"),
        (":MyParent", "expected MODULE:CLASS, such as workflows:MyParent"),
        ("nosuch:X", "no module named 'nosuch' in {cwd} or on the path"),
        ("nosuch.deeper:X", "no module named 'nosuch' in {cwd} or on the path"),
        ("broken:X", "importing broken: ModuleNotFoundError: No module named 'not_installed'"),
        ("raising:X", "importing raising: RuntimeError: no configuration"),
        ("mine:Missing", "mine has no attribute 'Missing'"),
        ("mine:helper", "helper is not a workflow class (no @workflow.defn)"),
        ("mine:Plain", "Plain is not a workflow class (no @workflow.defn)"),
    ],
)
def test_a_bad_workflow_is_a_usage_error_on_one_line(
    tmp_path: Path, spec: str, problem: str
) -> None:
    (tmp_path / "broken.py").write_text("import not_installed\n", encoding="utf-8")
    (tmp_path / "raising.py").write_text("raise RuntimeError('no configuration')\n")
    (tmp_path / "mine.py").write_text("def helper(): ...\nclass Plain: ...\n", encoding="utf-8")
    history = tmp_path / "h.json"
    history.write_text("{}", encoding="utf-8")
    done = run(
        [TOOLCALLS, "replay", "--workflow", spec, str(history)], tmp_path, TEMPORAL_ADDRESS=OFFLINE
    )
    assert done.returncode == 2
    assert done.stdout == ""
    expected = problem.format(cwd=tmp_path)
    assert one_line(done.stderr) == f"toolcalls: replay: --workflow {spec}: {expected}"


async def test_replay_histories_replays_paths_and_history_objects() -> None:
    files = parent_files()
    objects = [
        WorkflowHistory.from_json(f"object-{path.stem}", path.read_text(encoding="utf-8"))
        for path in files
    ]
    reports = await toolcalls.replay_histories(
        [*files, *objects, CALLS / "allowed.json"], workflows=[AgentParent]
    )
    assert [(r.file, r.verdict) for r in reports] == [
        *((str(path), "ok") for path in files),
        *((f"object-{path.stem}", "ok") for path in files),
        (str(CALLS / "allowed.json"), "ok"),
    ]
    # A history replays under the id its start event records, whatever the object was named:
    # ToolCalls names its calls after the parent's id.
    assert [r.workflow_id for r in reports[: 2 * len(files)]] == 2 * [
        f"recorded-{path.stem}" for path in files
    ]
    assert all(r.events > 0 for r in reports)
    # Naming ToolCallWorkflow too, as a user might, is no mistake.
    await toolcalls.replay_histories(files, [AgentParent, toolcalls.ToolCallWorkflow])


async def test_replay_histories_raises_naming_every_history_that_did_not_replay(
    tmp_path: Path,
) -> None:
    files = parent_files()
    missing = tmp_path / "missing.json"
    with pytest.raises(toolcalls.ReplayFailed) as raised:
        await toolcalls.replay_histories([*files, missing], workflows=[SleepsFirst])
    failure = raised.value
    assert isinstance(failure.__cause__, NondeterminismError)
    lines = str(failure).splitlines()
    assert lines[0] == f"{len(files) + 1} of {len(files) + 1} histories did not replay:"
    for line, path in zip(lines[1:], files, strict=False):
        assert line.startswith(f"nondeterministic {path} (recorded-{path.stem}, ")
        assert "[TMPRL1100] Nondeterminism error" in line
    assert lines[-1] == f"unreadable       {missing}: cannot read: No such file or directory"
    assert [r.verdict for r in failure.reports] == [
        *(["nondeterministic"] * len(files)),
        "unreadable",
    ]


async def test_replay_histories_can_return_the_failures_instead() -> None:
    [first, *_] = parent_files()
    [changed] = await toolcalls.replay_histories(
        [first], [SleepsFirst], raise_on_replay_failure=False
    )
    assert changed.verdict == "nondeterministic"
    assert changed.reason is not None
    assert changed.reason.startswith("[TMPRL1100] Nondeterminism error")
    [without] = await toolcalls.replay_histories([first], raise_on_replay_failure=False)
    assert (without.verdict, without.reason) == (
        "failed",
        "a AgentParent history, not ToolCallWorkflow",
    )


async def test_replay_histories_takes_the_deployments_file(tmp_path: Path) -> None:
    config = tmp_path / "toolcalls.toml"
    config.write_text('tools = ["calculator"]\n', encoding="utf-8")
    [report] = await toolcalls.replay_histories(
        [CALLS / "allowed.json"], config=config, raise_on_replay_failure=False
    )
    assert report.verdict == "ok"
    with pytest.raises(toolcalls.ConfigError, match="cannot read"):
        await toolcalls.replay_histories([CALLS / "allowed.json"], config=tmp_path / "none.toml")


async def test_replay_histories_refuses_a_class_that_is_not_a_workflow() -> None:
    with pytest.raises(TypeError, match="is not a workflow class"):
        await toolcalls.replay_histories(parent_files(), workflows=[ParentInput])


def test_the_facade_names_the_helper_and_its_types() -> None:
    from toolcalls.worker import replay

    assert toolcalls.replay_histories is replay.replay_histories
    assert toolcalls.ReplayFailed is replay.ReplayFailed
    assert toolcalls.ReplayReport is replay.ReplayReport
    assert {"replay_histories", "ReplayFailed", "ReplayReport"} <= set(toolcalls.__all__)
