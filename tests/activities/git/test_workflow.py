"""``git`` through a real ``ToolCallWorkflow`` on a real server: allowed, approved, refused at
plan, held to its preview, and canceled mid-run."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.gitrepo import Repo, sleepers, slow_git
from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
    wait_for,
)
from tests.support.processes import eventually
from toolcalls.worker.config import Config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, Phase

READS_ALLOWED = {
    "rules": {"process.execute": "allow", "git.read": "allow"},
    "default_effect": "require_approval",
}


def deployment(task_queue: str, tmp_path: Path, repo: Repo, **git: Any) -> Config:
    ceiling = git.pop("ceiling", READS_ALLOWED)
    return make_config(
        task_queue,
        tools=["git"],
        state_dir=str(tmp_path / "state"),
        git={"cwd": str(repo.path), "allow_write": True, "kill_grace_seconds": 0.5, **git},
        ceiling=ceiling,
        # Cancellation rides on heartbeats, which the SDK sends at most every 0.8 x the
        # heartbeat timeout: a shorter one than the declared 10 s keeps the cancel test quick.
        activities={"timeouts": {"git": {"start_to_close_seconds": 330, "heartbeat_seconds": 1}}},
    )


@pytest.fixture
def repo(repo: Repo) -> Repo:
    """The folder's repository with ``a.txt`` changed in the work tree."""
    repo.write("a.txt", "a\nchanged\n")
    return repo


async def test_status_runs_without_approval_and_commit_runs_once_approved(
    client: Client, task_queue: str, tmp_path: Path, repo: Repo
) -> None:
    async with running_worker(client, deployment(task_queue, tmp_path, repo)):
        status = await run_call(client, task_queue, "git", {"operation": "status"})
        assert status.status is CallStatus.COMPLETED, status.error
        assert status.capabilities == ["git.read", "process.execute"]
        assert status.approval is None
        assert status.output["stdout"] == "## main\n M a.txt\n"
        assert status.output["exit_code"] == 0
        repo.git("add", "a.txt")
        handle = await start_call(
            client, task_queue, "git", {"operation": "commit", "message": "approved change"}
        )
        pending = await pending_approval(handle)
        assert pending.capabilities == ["git.write", "process.execute"]
        assert pending.reasons == ["git.write: require_approval (deployment rule default)"]
        process = next(a for a in pending.preview if a.kind == "process")
        assert process.data is not None
        argv = process.data["argv"]
        assert argv[-5:] == [
            "commit",
            "--no-verify",
            "--no-gpg-sign",
            "--no-edit",
            "--message=approved change",
        ]
        assert "core.hooksPath=/dev/null" in argv
        assert process.text == shlex.join(argv)
        assert process.data["cwd"] == str(repo.path)
        assert repo.git("log", "--format=%s") == "first\n"
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.approval is not None
    assert result.approval.approver == "alice"
    assert result.output["exit_code"] == 0
    assert result.output["stdout"].startswith("[main ")
    assert repo.git("log", "--format=%an|%s") == "toolcalls|approved change\nTest|first\n"


async def test_a_command_changed_during_approval_does_not_run(
    client: Client, task_queue: str, tmp_path: Path, repo: Repo
) -> None:
    repo.git("add", "a.txt")
    async with running_worker(client, deployment(task_queue, tmp_path, repo)):
        handle = await start_call(
            client, task_queue, "git", {"operation": "commit", "message": "m"}
        )
        pending = await pending_approval(handle)
        repo.config("filter.sneaky.clean", "cat")
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await handle.result()
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.PRECONDITION_FAILED
    assert "(env changed)" in result.error.message
    assert repo.git("log", "--format=%s") == "first\n"


async def test_refusals_end_the_call_at_plan(
    client: Client, task_queue: str, tmp_path: Path, repo: Repo
) -> None:
    config = deployment(task_queue, tmp_path, repo, allow_write=False)
    async with running_worker(client, config):
        add = await run_call(client, task_queue, "git", {"operation": "add", "paths": ["a.txt"]})
        mixed = await run_call(client, task_queue, "git", {"operation": "status", "message": "x"})
    for result, fixable in ((add, ["operation"]), (mixed, ["message"])):
        assert result.status is CallStatus.FAILED
        assert result.error is not None
        assert result.error.code is ErrorCode.INVALID_ARGUMENTS
        assert result.error.fixable_args == fixable
        assert [e.kind for e in result.events] == [EventKind.FINISHED]
    assert repo.git("status", "--short") == " M a.txt\n"


async def test_a_canceled_operation_leaves_no_process(
    client: Client, task_queue: str, tmp_path: Path, repo: Repo, tag: str
) -> None:
    wrapper = slow_git(tmp_path / "bin", tag)
    config = deployment(
        task_queue, tmp_path, repo, executable=str(wrapper), ceiling={"default_effect": "allow"}
    )
    async with running_worker(client, config):
        handle = await start_call(client, task_queue, "git", {"operation": "status"})
        await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
        await eventually(lambda: bool(sleepers(tag)), what="git started")
        await asyncio.sleep(0.5)
        await handle.cancel()
        result = await asyncio.wait_for(handle.result(), 30)
    # ``git`` is a write tool (add and commit), so a lost worker or a cancellation while it
    # runs is ``uncertain`` for every operation, as the plan's side effect says.
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert result.error.message.endswith(
        "; no exit status; the effect may have begun: inspect before calling again"
    )
    assert result.output["canceled"] is True
    assert result.output["stdout"] == "started status\n"
    assert sleepers(tag) == []
    assert list((tmp_path / "state" / "process-groups").iterdir()) == []
