"""Stopping a running command: the cancellation reaches its whole process group within a second
(with the default heartbeat settings) and the call ends ``uncertain``, its write may have begun."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from tests.support.harness import make_config, running_worker, start_call, wait_for
from tests.support.parents import AgentParent, ParentInput
from tests.support.processes import SYSTEM_PATH, eventually, process_state
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.worker.config import Config
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, Phase, ToolCallRequest

ALLOW_ALL = {"default_effect": "allow"}
GRANDCHILD = "(sleep 100 & echo $! > {pid}; wait) & echo started; wait"
"""A shell whose subshell starts a ``sleep`` (the shell's grandchild) and writes its pid."""


def config(task_queue: str, tmp_path: Path, root: Path) -> Config:
    """The processes' default timeouts (a 10 s heartbeat timeout): no fast heartbeat setting."""
    return make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "execute_command"],
        state_dir=str(tmp_path / "state"),
        ceiling=ALLOW_ALL,
        process={"roots": [str(root)], "kill_grace_seconds": 0.5, "max_timeout_seconds": 60},
    )


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


async def until_dead(pid: int, timeout: float) -> float:
    """Seconds until ``pid`` is gone (or a zombie); fails after ``timeout``."""
    started = time.monotonic()
    while alive(pid):
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{pid} still alive after {timeout} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def test_a_canceled_command_loses_its_whole_group_within_a_second_and_is_uncertain(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = GRANDCHILD.format(pid=pid_file)
    arguments = {"argv": ["sh", "-c", script], "cwd": str(root), "env": [f"PATH={SYSTEM_PATH}"]}
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "execute_command", arguments)
        await wait_for(handle, lambda state: state.phase is Phase.RUNNING)
        await eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        grandchild = int(pid_file.read_text())
        assert alive(grandchild)
        await asyncio.sleep(1.5)  # past the first heartbeat: the throttled ones must carry it
        await handle.cancel(reason="wrong branch")
        gone_after = await until_dead(grandchild, 10)
        result = await asyncio.wait_for(handle.result(), 30)
    assert gone_after < 1.0, gone_after
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert result.error.message == (
        "execute_command: canceled; the process group was killed; no exit status; "
        "the effect may have begun: inspect before calling again"
    )
    assert isinstance(result.output, dict)
    assert result.output["canceled"]
    assert result.output["exit_code"] is None
    assert result.output["stdout"] == "started\n"


async def test_canceling_a_parent_stops_its_running_command_the_same_way(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = GRANDCHILD.format(pid=pid_file)
    arguments = {"argv": ["sh", "-c", script], "cwd": str(root), "env": [f"PATH={SYSTEM_PATH}"]}
    request = ToolCallRequest(tool="execute_command", arguments=arguments, call_id="cmd")
    app_queue = f"app-{uuid.uuid4()}"
    parent_app = Worker(
        client, task_queue=app_queue, workflows=[AgentParent], workflow_runner=sandbox_runner()
    )
    async with running_worker(client, config(task_queue, tmp_path, root)), parent_app:
        parent = await client.start_workflow(
            AgentParent.run,
            ParentInput(task_queue=task_queue, batches=[[request]]),
            id=f"parent-{uuid.uuid4()}",
            task_queue=app_queue,
        )
        child = client.get_workflow_handle_for(ToolCallWorkflow.run, f"{parent.id}/tools/cmd")
        await eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        grandchild = int(pid_file.read_text())
        await asyncio.sleep(1.5)
        await parent.cancel()
        gone_after = await until_dead(grandchild, 10)
        result = await asyncio.wait_for(child.result(), 30)
    assert gone_after < 1.0, gone_after
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.message.startswith("execute_command: canceled; the process group was")
