"""``toolcalls call`` and ``pending`` as real subprocesses: ids that ran, plans, sizes, diffs."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from tests.support.harness import make_config, running_worker
from tests.support.inline import app_worker, inline_config, start_parent
from tests.support.parents import ParentInput
from tests.worker.support import command, field, one_line, pending_entry, pending_row
from toolcalls.worker.render import PREVIEW_CHARS, shorten
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    ToolCallRequest,
    ToolCallResult,
)
from toolcalls.workflows.models.limits import PAYLOAD_LIMIT_BYTES


async def test_an_id_that_ran_gives_its_result_and_starts_nothing(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    workflow_id = f"cli-once-{uuid.uuid4()}"
    call = ("call", "calculator", '{"expression": "6 * 7"}', "--id", workflow_id)
    queue = ("--task-queue", task_queue)
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
    async with running_worker(client, make_config(task_queue)):
        first = await command(tmp_path, address, *call, *queue)
        assert (first.code, first.stderr) == (0, "")
        run_id = (await handle.describe()).run_id
        again = await command(tmp_path, address, *call, *queue)
        as_json = await command(tmp_path, address, *call, "--json", *queue)
    assert again.code == 0
    assert again.stdout == first.stdout
    assert field(again.stdout, "output") == '{"expression": "6 * 7", "result": 42}'
    note = f"toolcalls: call {workflow_id} already ran: its recorded result, nothing started again"
    assert one_line(again.stderr) == note
    assert as_json.code == 0
    assert one_line(as_json.stderr) == note
    assert ToolCallResult.model_validate_json(as_json.stdout) == await handle.result()
    assert (await handle.describe()).run_id == run_id


async def test_no_wait_reports_invalid_arguments_at_once(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    queue = ("--task-queue", task_queue)
    bad, good = (f"cli-plan-{uuid.uuid4()}" for _ in range(2))
    async with running_worker(client, make_config(task_queue)):
        refused = await command(
            tmp_path,
            address,
            *("call", "calculator", '{"expression": "x + 1"}', "--no-wait", "--id", bad, *queue),
        )
        started = await command(
            tmp_path,
            address,
            *("call", "calculator", '{"expression": "1"}', "--require-approval", "--no-wait"),
            *("--id", good, "--json", *queue),
        )
        await command(tmp_path, address, "deny", good)
    assert refused.code == 1
    assert field(refused.stdout, "status") == "failed"
    assert field(refused.stdout, "error").startswith("invalid_arguments: calculator: ")
    assert one_line(refused.stderr).startswith(
        f"toolcalls: call {bad}: failed: invalid_arguments: "
    )
    assert started.code == 0, started.stderr
    assert json.loads(started.stdout)["workflow_id"] == good


async def test_a_request_over_the_payload_limit_exits_2_and_starts_nothing(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    workflow_id = f"cli-big-{uuid.uuid4()}"
    arguments = tmp_path / "big.json"
    arguments.write_text(json.dumps({"text": "x" * (3 * 1024 * 1024)}), encoding="utf-8")
    done = await command(
        tmp_path,
        address,
        *("call", "probe_echo", f"@{arguments}", "--id", workflow_id, "--task-queue", task_queue),
    )
    assert (done.code, done.stdout) == (2, "")
    line = one_line(done.stderr)
    assert line.startswith("toolcalls: call: probe_echo: the request is ")
    assert line.endswith(" bytes)")
    assert f"; the limit is {PAYLOAD_LIMIT_BYTES} bytes: shrink 'text' (" in line
    with pytest.raises(RPCError) as missing:
        await client.get_workflow_handle(workflow_id).describe()
    assert missing.value.status is RPCStatusCode.NOT_FOUND


async def test_pending_shows_the_lines_a_new_file_gets(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    files = {"roots": [str(root)], "checkpoints": str(tmp_path / "checkpoints.db")}
    config = make_config(task_queue, tools=["create_file"], files=files)
    workflow_id = f"cli-create-{uuid.uuid4()}"
    path = root / "notes.txt"
    arguments = json.dumps({"path": str(path), "content": "hello\nworld\n"})
    async with running_worker(client, config):
        started = await command(
            tmp_path,
            address,
            *("call", "create_file", arguments, "--no-wait", "--id", workflow_id),
            *("--task-queue", task_queue),
        )
        assert started.code == 0, started.stderr
        listed = await pending_entry(tmp_path, address, workflow_id)
        cells = await pending_row(tmp_path, address, workflow_id)
        denied = await command(tmp_path, address, "deny", workflow_id)
        assert denied.code == 0, denied.stderr
        result = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    preview = f"create_file {path}: +hello +world"
    assert listed["preview"] == preview
    assert cells[:4] == [workflow_id, "create_file", "filesystem.write", "approval"]
    assert cells[6] == shorten(preview, PREVIEW_CHARS)
    assert (result.status, result.error.code if result.error else None) == (
        CallStatus.DENIED,
        ErrorCode.APPROVAL_DENIED,
    )
    assert not path.exists()


async def test_pending_lists_an_inline_call_and_approve_reaches_its_parent(
    tmp_path: Path, client: Client, address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = ToolCallRequest(tool="calculator", arguments={"expression": "5 * 5"}, call_id="c")
    policy = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})
    config = inline_config(task_queue, monkeypatch)
    async with running_worker(client, config), app_worker(client) as queue:
        parent = await start_parent(
            client,
            queue,
            ParentInput(task_queue=task_queue, batches=[[request]], policy=policy, inline=True),
        )
        call_id = f"{parent.id}/tools/c"
        listed = await pending_entry(tmp_path, address, call_id)
        approved = await command(tmp_path, address, "approve", call_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        output = await parent.result()
    assert (listed["inline"], listed["parent_id"]) == (True, parent.id)
    assert listed["approval"]["arguments"] == {"expression": "5 * 5"}
    [result] = output.results
    assert (result.status, result.output) == (
        CallStatus.COMPLETED,
        {"expression": "5 * 5", "result": 25},
    )
    assert result.approval is not None
    assert result.approval.approver == "alice"
