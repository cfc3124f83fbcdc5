"""The real ``toolcalls`` command, run as a subprocess against real dev servers."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.worker.support import (
    TOOLCALLS,
    Spawn,
    free_port,
    hermetic_env,
    one_line,
    pids_with,
    port_open,
    run,
    wait_port_closed,
    write_config,
)
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import ApprovalDecision
from toolcalls.workflows.models.call import (
    SEARCH_TOOL,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ToolCallRequest,
)


async def test_worker_dev_runs_an_approved_call_and_stops_on_sigterm(
    tmp_path: Path, spawn: Spawn
) -> None:
    port = free_port()
    task_queue = f"cli-{uuid.uuid4()}"
    data_dir = tmp_path / "data"
    config = write_config(
        tmp_path,
        f'task_queue = "{task_queue}"\ntools = ["calculator"]\n'
        "[worker]\ngraceful_shutdown_seconds = 5\n"
        f'[dev]\ndata_dir = "{data_dir}"\nport = {port}\nheadless = true\n',
    )
    # A profile meant for another server must not leak into the embedded one.
    env = hermetic_env(tmp_path, TEMPORAL_ADDRESS="127.0.0.1:1", TEMPORAL_API_KEY="not-for-dev")
    worker = spawn("worker", "--dev", "--config", str(config), env=env)
    line = worker.wait_for_line("polling task queue", timeout=60)
    assert f"connected to 127.0.0.1:{port} namespace default" in line
    assert f"'{task_queue}': workflows=yes tools=calculator" in line
    assert (data_dir / "temporal.db").is_file()

    client = await Client.connect(f"127.0.0.1:{port}", data_converter=pydantic_data_converter)
    handle = await client.start_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(
            tool="calculator",
            arguments={"expression": "6 * 7"},
            policy=CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL}),
        ),
        id=f"cli-call-{uuid.uuid4()}",
        task_queue=task_queue,
    )
    deadline = time.monotonic() + 20
    while (pending := (await handle.query(ToolCallWorkflow.status)).pending_approval) is None:
        assert time.monotonic() < deadline, "no approval was requested"
        await asyncio.sleep(0.1)
    assert pending.tool == "calculator"
    assert pending.reasons == ["tool:calculator: require_approval (request rule tool:calculator)"]
    record = await handle.execute_update(
        ToolCallWorkflow.decide,
        ApprovalDecision(
            request_id=pending.request_id, digest=pending.digest, approved=True, approver="tester"
        ),
    )
    assert record.approved
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "6 * 7", "result": 42}
    assert result.approval is not None
    assert (result.approval.approver, result.approval.via) == ("tester", "update")
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_TOOL) == "calculator"

    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(30) == 0
    assert "worker stopped" in "".join(worker.stderr)
    assert wait_port_closed(port)
    assert pids_with(str(data_dir)) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[worker]\nmax_concurrent_activities = "lots"', "worker.max_concurrent_activities: "),
        ('log_level = "LOUD"', "log_level: unknown log level 'LOUD'"),
        ('tools = ["teleport"]', "tools: unknown tools teleport"),
        ("tools = [", "not valid TOML"),
    ],
)
def test_bad_config_exits_2_naming_the_key(tmp_path: Path, text: str, expected: str) -> None:
    config = write_config(tmp_path, text, "bad.toml")
    done = run([TOOLCALLS, "worker", "--config", str(config)], tmp_path)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert line.startswith(f"toolcalls: {config}: ")
    assert expected in line


def test_bad_config_from_toolcalls_config_exits_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, "[activities]\nread_attempts = 4\n", "env.toml")
    done = run([TOOLCALLS, "worker"], tmp_path, TOOLCALLS_CONFIG=str(config))
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        f"toolcalls: {config}: activities.read_attempts: Input should be less than or equal to 3"
    )


def test_unknown_temporal_profile_exits_2(tmp_path: Path) -> None:
    profiles = write_config(tmp_path, '[profile.default]\naddress = "x:1"\n', "temporal.toml")
    config = write_config(
        tmp_path, f'[temporal]\nprofile = "nope"\nconfig_file = "{profiles}"\n', "bad.toml"
    )
    done = run([TOOLCALLS, "worker", "--config", str(config)], tmp_path)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert line.startswith("toolcalls: temporal profile nope in ")
    assert "not found" in line


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:1", "toolcalls: cannot connect to 127.0.0.1:1 namespace default: "),
        ("127.0.0.1:99999", "toolcalls: cannot connect to 127.0.0.1:99999 namespace default: "),
    ],
)
def test_unreachable_server_exits_2(tmp_path: Path, address: str, expected: str) -> None:
    # A connect that retried forever would hang: run()'s 60 s timeout raises TimeoutExpired.
    done = run([TOOLCALLS, "worker", "--address", address], tmp_path, timeout=60)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(expected)


def test_no_subcommand_exits_2(tmp_path: Path) -> None:
    done = run([TOOLCALLS], tmp_path)
    assert done.returncode == 2
    assert "usage: toolcalls" in done.stderr
    assert one_line(done.stderr.split("\n", 1)[1]).startswith(
        "toolcalls: choose a command: worker, "
    )


def test_python_m_toolcalls_is_the_command(tmp_path: Path) -> None:
    done = run([sys.executable, "-m", "toolcalls", "--help"], tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: toolcalls")
    assert "replay" in done.stdout


def test_python_m_toolcalls_worker_help(tmp_path: Path) -> None:
    done = run([sys.executable, "-m", "toolcalls.worker", "--help"], tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: toolcalls worker")
    for flag in ("--config", "--dev", "--address", "--namespace", "--task-queue"):
        assert flag in done.stdout


def test_dev_refuses_a_port_in_use(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run(
            [TOOLCALLS, "dev", "--db", str(tmp_path / "x.db"), "--port", str(port)], tmp_path
        )
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(f"toolcalls: port {port} on 127.0.0.1 is in use")
    assert not db.exists()


async def test_dev_keeps_state_in_its_db_and_stops_on_sigint(tmp_path: Path, spawn: Spawn) -> None:
    db = tmp_path / "x.db"
    port = free_port()
    workflow_id = f"persisted-{uuid.uuid4()}"
    args = ("dev", "--db", str(db), "--port", str(port), "--headless")

    first = spawn(*args)
    line = first.wait_for_line("Temporal dev server at", timeout=60)
    assert line.strip() == f"Temporal dev server at 127.0.0.1:{port} (state in {db})"
    client = await Client.connect(f"127.0.0.1:{port}", data_converter=pydantic_data_converter)
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default")
    )
    assert {"ToolCallStatus", "ToolName", "ToolCapabilities"} <= set(listed.custom_attributes)
    # No worker polls this queue: the workflow simply waits, stored in the db file.
    await client.start_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(tool="calculator", arguments={"expression": "1"}),
        id=workflow_id,
        task_queue=f"nobody-{uuid.uuid4()}",
    )
    first.process.send_signal(signal.SIGINT)
    assert first.finish(30) == 0
    assert wait_port_closed(port)
    assert db.is_file()

    second = spawn(*args)
    second.wait_for_line("Temporal dev server at", timeout=60)
    client = await Client.connect(f"127.0.0.1:{port}", data_converter=pydantic_data_converter)
    description = await client.get_workflow_handle(workflow_id).describe()
    assert description.status is WorkflowExecutionStatus.RUNNING
    assert description.workflow_type == "ToolCallWorkflow"
    second.process.send_signal(signal.SIGINT)
    assert second.finish(30) == 0
    assert wait_port_closed(port)
    assert not port_open(port)
    assert pids_with(str(db)) == []
