"""How a ``git`` run starts and ends: the previewed process, timeouts, budgets, cancellation,
worker shutdown, heartbeats and the process-group ledger, in real activity contexts.

Long runs use a wrapper executable that, for ``status`` or ``commit``, prints ``started`` and
waits on a ``sleep`` child: killing only the wrapper would leave that child behind.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support.gitrepo import CONTEXT, Repo, git_tools, run_git, sleepers, slow_git
from tests.support.processes import activity_env, eventually
from toolcalls.activities.base import CallContext
from toolcalls.activities.processes.git import GitArgs, GitTools
from toolcalls.activities.processes.git.command import SAFE_CONFIG, SAFE_ENV
from toolcalls.activities.processes.runner import ProcessResult
from toolcalls.workflows.models.call import ErrorCode


def with_precondition(precondition: dict[str, Any] | None) -> CallContext:
    return CallContext("wf", "call", "wf:call", None, precondition)


async def test_the_preview_is_the_exact_process_and_execute_holds_to_it(repo: Repo) -> None:
    tools = git_tools(repo, author_name="Agent", author_email="agent@example.com")
    args = GitArgs(operation="commit", message="it's done")
    prepared = await activity_env().run(tools.prepare_git, args, CONTEXT)
    (artifact,) = prepared.preview
    assert artifact.kind == "process"
    assert artifact.title == f"git commit in {repo.path}"
    assert artifact.data is not None
    argv = artifact.data["argv"]
    assert argv[0] == shutil.which("git", path=os.defpath)  # git.env unset: PATH=os.defpath
    assert argv[-5:] == [
        "commit",
        "--no-verify",
        "--no-gpg-sign",
        "--no-edit",
        "--message=it's done",
    ]
    for key, value in SAFE_CONFIG:
        assert f"{key}={value}" in argv
    assert artifact.text == shlex.join(argv)
    assert artifact.data["cwd"] == str(repo.path)
    env = artifact.data["env"]
    assert {k: env[k] for k in SAFE_ENV} == dict(SAFE_ENV)
    assert env["GIT_AUTHOR_NAME"] == env["GIT_COMMITTER_NAME"] == "Agent"
    assert (artifact.data["timeout_seconds"], artifact.data["max_output_bytes"]) == (60.0, 65536)
    assert prepared.precondition == {"process": artifact.data}
    repo.write("a.txt", "changed\n")
    repo.git("add", "a.txt")
    result = await run_git(
        tools,
        call=with_precondition(prepared.precondition),
        operation="commit",
        message="it's done",
    )
    assert result.exit_code == 0
    assert repo.git("log", "-1", "--format=%s") == "it's done\n"


async def test_a_new_filter_driver_after_approval_fails_the_precondition(repo: Repo) -> None:
    tools = git_tools(repo)
    prepared = await activity_env().run(tools.prepare_git, GitArgs(operation="status"), CONTEXT)
    repo.config("filter.late.clean", "cat")
    with pytest.raises(ApplicationError) as info:
        await run_git(tools, call=with_precondition(prepared.precondition), operation="status")
    assert info.value.type == ErrorCode.PRECONDITION_FAILED.value
    assert info.value.message == (
        "git: status: the command is no longer the approved one (env changed); "
        "call again for a new approval"
    )


async def test_other_settings_than_the_approved_ones_fail_the_precondition(repo: Repo) -> None:
    prepared = await activity_env().run(
        git_tools(repo).prepare_git, GitArgs(operation="status"), CONTEXT
    )
    other = git_tools(repo, timeout_seconds=5)
    with pytest.raises(ApplicationError, match=r"\(timeout_seconds changed\)"):
        await run_git(other, call=with_precondition(prepared.precondition), operation="status")
    with pytest.raises(ApplicationError, match=r"\(everything changed\)"):
        await run_git(other, call=with_precondition({"other": 1}), operation="status")


async def test_a_timeout_is_a_result_and_kills_the_group(
    repo: Repo, tmp_path: Path, tag: str
) -> None:
    tools = git_tools(repo, executable=str(slow_git(tmp_path / "bin", tag)), timeout_seconds=1)
    result = await run_git(tools, operation="status")
    assert result.timed_out is True
    assert result.exit_code is None
    assert result.stdout == "started status\n"
    assert result.budget_exceeded is False
    # It waited out the timeout, not the wrapper's sleep of at least 100 s.
    assert 1 <= result.duration_seconds < 50
    assert sleepers(tag) == []


async def test_the_call_budget_cuts_the_run_short(repo: Repo, tmp_path: Path, tag: str) -> None:
    tools = git_tools(repo, executable=str(slow_git(tmp_path / "bin", tag)), kill_grace_seconds=0)
    result = await run_git(tools, activity_env(schedule_to_close=5.5), operation="status")
    # Cut by the call's budget, not by the tools' timeout or the wrapper's 100 s sleep.
    assert (result.timed_out, result.budget_exceeded, result.exit_code) == (True, True, None)
    assert sleepers(tag) == []


async def test_too_little_budget_runs_nothing(repo: Repo, tmp_path: Path, tag: str) -> None:
    tools = git_tools(repo, executable=str(slow_git(tmp_path / "bin", tag)))
    with pytest.raises(ApplicationError) as info:
        await run_git(tools, activity_env(schedule_to_close=3), operation="status")
    assert info.value.type == ErrorCode.BUDGET_EXCEEDED.value
    assert "of the call's budget: too little to run and stop git" in info.value.message
    assert sleepers(tag) == []


async def started(
    tools: GitTools, env: ActivityEnvironment, tag: str, **arguments: Any
) -> tuple[asyncio.Task[ProcessResult], list[dict[str, Any]]]:
    """A run of the slow wrapper, once its output has reached a heartbeat (and so the runner).

    Waiting for the ``sleep`` child alone is not enough: it can exist before the runner has its
    pipes, and a cancellation then meets a runner that cannot yet kill the group.
    """
    beats: list[dict[str, Any]] = []
    env.on_heartbeat = lambda *details: beats.append(details[0])
    running = asyncio.create_task(run_git(tools, env, **arguments))
    await eventually(lambda: bool(sleepers(tag)), what="git started")
    await eventually(lambda: any("started" in b.get("tail", "") for b in beats), what="a beat")
    return running, beats


async def test_cancellation_kills_the_group_and_keeps_the_partial_output(
    repo: Repo, tmp_path: Path, tag: str
) -> None:
    ledger = tmp_path / "ledger"
    tools = git_tools(repo, ledger, executable=str(slow_git(tmp_path / "bin", tag)))
    env = activity_env()
    running, beats = await started(tools, env, tag, operation="status")
    assert [entry.name for entry in ledger.iterdir()] != []
    env.cancel()
    with pytest.raises(ApplicationError) as info:
        await running
    assert info.value.type == ErrorCode.CANCELED.value
    assert info.value.message == "git: status: canceled"
    output = info.value.details[0]["output"]
    assert (output["canceled"], output["exit_code"], output["stdout"]) == (
        True,
        None,
        "started status\n",
    )
    assert sleepers(tag) == []
    assert list(ledger.iterdir()) == []
    assert beats[-1]["operation"] == "status"
    assert beats[-1]["phase"] == "running"


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        (
            {"operation": "commit", "message": "m"},
            ErrorCode.UNCERTAIN,
            "git: commit: the worker shut down while git ran; the change may have happened: "
            "inspect before calling again",
        ),
        ({"operation": "status"}, ErrorCode.CANCELED, "git: status: canceled"),
    ],
)
async def test_worker_shutdown_makes_an_interrupted_write_uncertain(
    repo: Repo, tmp_path: Path, tag: str, arguments: dict[str, Any], code: ErrorCode, message: str
) -> None:
    tools = git_tools(repo, executable=str(slow_git(tmp_path / "bin", tag)))
    env = activity_env()
    running, _ = await started(tools, env, tag, **arguments)
    env.worker_shutdown()
    env.cancel()
    with pytest.raises(ApplicationError) as info:
        await running
    assert (info.value.type, info.value.message) == (code.value, message)
    assert info.value.details[0]["output"]["canceled"] is True
    assert sleepers(tag) == []


async def test_unreadable_configuration_fails_closed(repo: Repo) -> None:
    (repo.path / ".git" / "config").write_text("[core\nbroken", encoding="utf-8")
    with pytest.raises(ApplicationError) as info:
        await run_git(git_tools(repo), operation="status")
    assert info.value.type == ErrorCode.EXECUTION_FAILED.value
    assert info.value.message.startswith(
        "git: cannot read the repository's filter configuration: fatal: bad config line 1"
    )


async def test_too_many_filter_drivers_fail_closed(repo: Repo) -> None:
    with (repo.path / ".git" / "config").open("a", encoding="utf-8") as config:
        for n in range(65):
            config.write(f'[filter "f{n}"]\n\tclean = cat\n')
    with pytest.raises(ApplicationError) as info:
        await run_git(git_tools(repo), operation="status")
    assert info.value.type == ErrorCode.EXECUTION_FAILED.value
    assert info.value.message == "git: the repository configures 65 filter drivers; the limit is 64"
