"""execute_command and run_shell through a real ToolCallWorkflow on the session's dev server.

Allowed and approved paths, previews and preconditions, limits refused before approval,
cancellation, budgets and worker shutdown; every command is a real process group that must be
gone when the call ends.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client

from tests.support.harness import (
    Handle,
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
    wait_for,
)
from tests.support.processes import SYSTEM_PATH, eventually, executable, live_members
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.worker.config import Config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, Phase, ToolCallResult

ALLOW_ALL = {"default_effect": "allow"}
FAST_HEARTBEAT = {
    "timeouts": {
        name: {"start_to_close_seconds": 40, "heartbeat_seconds": 1}
        for name in ("execute_command", "run_shell")
    }
}
"""Heartbeats are throttled to 0.8 x the timeout: a short one makes them visible quickly."""


def config(task_queue: str, tmp_path: Path, root: Path, **sections: Any) -> Config:
    return make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "execute_command", "run_shell"],
        state_dir=str(tmp_path / "state"),
        process={"roots": [str(root)], "kill_grace_seconds": 0.5, "max_timeout_seconds": 30},
        shell={
            "cwd": str(root),
            "env": {"PATH": SYSTEM_PATH},
            "kill_grace_seconds": 0.5,
            "timeout_seconds": 30,
        },
        **sections,
    )


def command(root: Path, argv: list[str], **more: Any) -> dict[str, Any]:
    return {"argv": argv, "cwd": str(root), "env": [f"PATH={SYSTEM_PATH}"], **more}


def pgid_of(output: Any) -> int:
    assert isinstance(output, dict)
    line = next(line for line in output["stdout"].splitlines() if line.startswith("pgid="))
    return int(line.removeprefix("pgid="))


async def approve(handle: Handle) -> ToolCallResult:
    pending = await pending_approval(handle)
    await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
    return await asyncio.wait_for(handle.result(), 30)


async def test_allowed_command_completes_with_its_exit_code(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    marker = tmp_path / "runs"
    script = f"echo run >> {marker}; echo out; echo err >&2; exit 3"
    async with running_worker(client, config(task_queue, tmp_path, root, ceiling=ALLOW_ALL)):
        result = await run_call(
            client, task_queue, "execute_command", command(root, ["sh", "-c", script])
        )
    assert result.status is CallStatus.COMPLETED
    assert result.error is None
    assert result.capabilities == ["process.execute"]
    assert isinstance(result.output, dict)
    assert (result.output["exit_code"], result.output["stdout"], result.output["stderr"]) == (
        3,
        "out\n",
        "err\n",
    )
    assert marker.read_text(encoding="utf-8") == "run\n"


async def test_a_timeout_is_a_completed_result_and_leaves_no_process(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    script = "echo pgid=$$; sleep 100 & wait"
    async with running_worker(client, config(task_queue, tmp_path, root, ceiling=ALLOW_ALL)):
        result = await run_call(
            client,
            task_queue,
            "execute_command",
            command(root, ["sh", "-c", script], timeout_seconds=1),
        )
    assert result.status is CallStatus.COMPLETED
    assert isinstance(result.output, dict)
    assert result.output["timed_out"]
    assert result.output["exit_code"] is None
    assert live_members(pgid_of(result.output)) == []


async def test_allowed_shell_runs_a_pipeline(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    async with running_worker(client, config(task_queue, tmp_path, root, ceiling=ALLOW_ALL)):
        result = await run_call(
            client, task_queue, "run_shell", {"command": "printf 'b\\na\\n' | sort"}
        )
    assert result.status is CallStatus.COMPLETED
    assert result.capabilities == ["process.execute", "shell.execute"]
    assert isinstance(result.output, dict)
    assert (result.output["exit_code"], result.output["stdout"]) == (0, "a\nb\n")


async def test_approval_preview_shows_the_command_as_it_will_run(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    (root / "real").mkdir()
    (root / "link").symlink_to(root / "real")
    arguments = command(root / "link", ["sh", "-c", "pwd"], timeout_seconds=9)
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "execute_command", arguments)
        pending = await pending_approval(handle)
        [process] = [artifact for artifact in pending.preview if artifact.kind == "process"]
        assert process.text is not None
        assert f"cwd:     {root / 'real'}" in process.text
        assert "argv:    /usr/bin/sh -c pwd" in process.text
        assert f"PATH={SYSTEM_PATH}" in process.text
        assert "9 s, then SIGTERM to the process group and SIGKILL 0.5 s later" in process.text
        assert pending.reasons == [
            "process.execute: require_approval (deployment rule process.execute)"
        ]
        result = await approve(handle)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "alice"
    assert isinstance(result.output, dict)
    assert result.output["stdout"] == f"{root / 'real'}\n"


async def test_approved_shell_command_runs_with_the_deployment_settings(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "run_shell", {"command": "pwd; env"})
        pending = await pending_approval(handle)
        assert sorted(pending.capabilities) == ["process.execute", "shell.execute"]
        [process] = [artifact for artifact in pending.preview if artifact.kind == "process"]
        assert process.data is not None
        assert process.data["spec"] == {
            "argv": ["/bin/sh", "-c", "pwd; env"],
            "cwd": str(root),
            "env": {"PATH": SYSTEM_PATH},
            "timeout_seconds": 30.0,
            "max_output_bytes": 65536,
        }
        result = await approve(handle)
    assert result.status is CallStatus.COMPLETED
    assert isinstance(result.output, dict)
    # sh adds PWD to the environment it was given, and nothing else.
    assert result.output["stdout"] == f"{root}\nPATH={SYSTEM_PATH}\nPWD={root}\n"


async def test_limits_over_the_ceiling_are_refused_before_any_approval(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    arguments = command(root, ["/bin/true"], timeout_seconds=31, max_output_bytes=2_000_000)
    async with running_worker(client, config(task_queue, tmp_path, root)):
        result = await run_call(client, task_queue, "execute_command", arguments)
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == ["timeout_seconds", "max_output_bytes"]
    assert "timeout_seconds: 31 is over this deployment's limit of 30" in result.error.message
    assert EventKind.APPROVAL_REQUESTED not in [event.kind for event in result.events]


async def test_a_path_change_during_approval_fails_the_precondition(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    marker = tmp_path / "ran"
    executable(second / "tool", f"echo second >> {marker}")
    arguments = command(root, ["tool"], env=[f"PATH={first}:{second}"])
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "execute_command", arguments)
        pending = await pending_approval(handle)
        [process] = [artifact for artifact in pending.preview if artifact.kind == "process"]
        assert process.text is not None
        assert f"argv:    {second}/tool" in process.text
        await asyncio.to_thread(executable, first / "tool", f"echo first >> {marker}")
        result = await approve(handle)
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.PRECONDITION_FAILED
    assert f"executable ('{second}/tool' -> '{first}/tool')" in result.error.message
    assert not marker.exists()


async def test_cancel_terms_then_kills_the_group_and_keeps_the_partial_output(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    script = "trap 'echo got-term' TERM; echo pgid=$$; while :; do sleep 0.1; done"
    settings = config(task_queue, tmp_path, root, ceiling=ALLOW_ALL, activities=FAST_HEARTBEAT)
    async with running_worker(client, settings):
        handle = await start_call(
            client, task_queue, "execute_command", command(root, ["sh", "-c", script])
        )
        await wait_for(handle, lambda state: state.phase is Phase.RUNNING)
        details = await heartbeat_details(client, handle)
        assert details["stdout_bytes"] > 0
        assert details["stderr_bytes"] == 0
        assert details["tail"].startswith("pgid=")
        await handle.cancel()
        result = await asyncio.wait_for(handle.result(), 30)
    # A command is a write: canceled while it ran, its effect may have begun.
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert result.error.message == (
        "execute_command: canceled; the process group was killed; no exit status; "
        "the effect may have begun: inspect before calling again"
    )
    assert isinstance(result.output, dict)
    assert result.output["canceled"]
    assert "got-term" in result.output["stdout"]
    assert result.output["duration_seconds"] >= 0.5
    assert live_members(pgid_of(result.output)) == []


async def heartbeat_details(client: Client, handle: Handle) -> dict[str, Any]:
    """The latest heartbeat of the call's running activity, once it reports some output."""
    found: dict[str, Any] = {}

    async def reported() -> bool:
        description = await handle.describe()
        for pending in description.raw_description.pending_activities:
            if pending.heartbeat_details.payloads:
                [details] = await client.data_converter.decode(pending.heartbeat_details.payloads)
                found.update(details)
        return int(found.get("stdout_bytes", 0)) > 0

    for _ in range(100):
        if await reported():
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"no heartbeat with output: {found}")


async def test_a_request_timeout_shorter_than_the_command_cuts_it(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    script = "echo pgid=$$; sleep 30"
    async with running_worker(client, config(task_queue, tmp_path, root, ceiling=ALLOW_ALL)):
        result = await run_call(
            client,
            task_queue,
            "execute_command",
            command(root, ["sh", "-c", script], timeout_seconds=30),
            timeout=timedelta(seconds=7),
        )
    assert result.status is CallStatus.COMPLETED
    assert isinstance(result.output, dict)
    assert result.output["timed_out"]
    assert result.output["budget_exceeded"]
    assert result.output["duration_seconds"] < 5
    assert live_members(pgid_of(result.output)) == []


async def test_graceful_worker_shutdown_kills_the_running_group(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    started = tmp_path / "started"
    script = f"echo $$ > {started}; sleep 100 & wait"
    settings = config(
        task_queue,
        tmp_path,
        root,
        ceiling=ALLOW_ALL,
        activities=FAST_HEARTBEAT,
        worker={"graceful_shutdown_seconds": 0.5},
    )
    async with running_worker(client, settings):
        handle = await start_call(client, task_queue, "run_shell", {"command": script})
        await eventually(lambda: started.exists() and started.read_text().strip() != "")
        pgid = int(started.read_text())
        assert live_members(pgid) != []
    # The worker is gone; it killed the group on its way out.
    assert live_members(pgid) == []
    async with running_worker(client, settings):
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.message == (
        "run_shell: the worker is shutting down; the process group was killed"
    )
