"""``toolcalls cancel`` as a real subprocess against the session's dev server and a worker."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import make_config, running_worker, start_call
from tests.support.processes import SYSTEM_PATH, eventually, process_state
from tests.worker.support import Spawn, command, one_line, write_config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode
from toolcalls.workflows.reach.stop import MAX_REASON_CHARS


async def test_cancel_stops_a_waiting_call_then_says_it_had_ended(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    workflow_id = f"cli-cancel-{uuid.uuid4()}"
    queue = ("--task-queue", task_queue)
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
    async with running_worker(client, make_config(task_queue)):
        started = await command(
            tmp_path,
            address,
            *("call", "calculator", '{"expression": "1"}', "--require-approval", "--no-wait"),
            *("--id", workflow_id, *queue),
        )
        assert started.code == 0, started.stderr
        stopped = await command(
            tmp_path, address, "cancel", workflow_id, "--reason", "wrong numbers", *queue
        )
        result = await handle.result()
        again = await command(tmp_path, address, "cancel", workflow_id, "--json", *queue)
    assert (stopped.code, stopped.stderr) == (0, "")
    assert stopped.stdout == f"cancel requested for {workflow_id}\n"
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.code is ErrorCode.CANCELED
    assert result.error.message == "the call was canceled: wrong numbers"
    assert again.code == 1
    assert json.loads(again.stdout) == {
        "workflow_id": workflow_id,
        "requested": False,
        "ended": "canceled",
    }
    assert one_line(again.stderr) == (
        f"toolcalls: cancel {workflow_id}: the call already ended canceled; nothing was changed"
    )


async def test_cancel_of_a_completed_call_an_unknown_id_and_a_long_reason(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    workflow_id = f"cli-cancel-done-{uuid.uuid4()}"
    queue = ("--task-queue", task_queue)
    async with running_worker(client, make_config(task_queue)):
        ran = await command(
            tmp_path,
            address,
            "call",
            "calculator",
            '{"expression": "2"}',
            "--id",
            workflow_id,
            *queue,
        )
        assert ran.code == 0, ran.stderr
        done = await command(tmp_path, address, "cancel", workflow_id, *queue)
    unknown = await command(tmp_path, address, "cancel", "no-such-call-" + workflow_id)
    long = await command(
        tmp_path, address, "cancel", workflow_id, "--reason", "x" * (MAX_REASON_CHARS + 1)
    )
    assert (done.code, done.stdout) == (1, "")
    assert one_line(done.stderr) == (
        f"toolcalls: cancel {workflow_id}: the call already ended completed; nothing was changed"
    )
    assert unknown.code == 1
    assert one_line(unknown.stderr) == (
        f"toolcalls: cancel: no-such-call-{workflow_id}: no call has this id"
    )
    assert long.code == 2
    assert one_line(long.stderr) == (
        f"toolcalls: cancel {workflow_id}: --reason: the reason has {MAX_REASON_CHARS + 1} "
        f"characters; the limit is {MAX_REASON_CHARS}"
    )


async def test_cancel_reaches_a_command_another_worker_process_runs(
    tmp_path: Path, spawn: Spawn, client: Client, address: str, task_queue: str
) -> None:
    """The worker is a process of its own and the cancel comes from a third: only the server
    links them. The command's grandchild is gone within a second of the request."""
    root = tmp_path / "root"
    root.mkdir()
    pid_file = tmp_path / "grandchild.pid"
    config = write_config(
        tmp_path,
        f'task_queue = "{task_queue}"\n'
        'tools = ["execute_command"]\n'
        f'state_dir = "{tmp_path / "state"}"\n'
        '[ceiling]\ndefault_effect = "allow"\n'
        f'[process]\nroots = ["{root}"]\nkill_grace_seconds = 0.5\n',
    )
    worker = spawn("worker", "--config", str(config), "--address", address)
    await asyncio.to_thread(worker.wait_for_line, "polling task queue", 60)
    script = f"(sleep 100 & echo $! > {pid_file}; wait) & echo started; wait"
    arguments = {"argv": ["sh", "-c", script], "cwd": str(root), "env": [f"PATH={SYSTEM_PATH}"]}
    handle = await start_call(client, task_queue, "execute_command", arguments)
    await eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
    grandchild = int(pid_file.read_text())
    assert process_state(grandchild) not in (None, "Z", "X")
    await asyncio.sleep(1.5)
    stopped = await command(tmp_path, address, "cancel", handle.id, "--config", str(config))
    sent = time.monotonic()
    assert (stopped.code, stopped.stderr) == (0, ""), stopped.stderr
    while process_state(grandchild) not in (None, "Z", "X"):
        assert time.monotonic() - sent < 1.0, "the grandchild outlived the cancellation by 1 s"
        await asyncio.sleep(0.02)
    result = await asyncio.wait_for(handle.result(), 30)
    worker.kill()
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.message.startswith("execute_command: canceled; the process group was")
    assert result.output["canceled"] is True
