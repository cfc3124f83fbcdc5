"""MCP Tasks over streamable HTTP: ``tools/call`` answered with a task, ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` sent by a raw JSON-RPC client as the extension's
specification gives them, against a real ``toolcalls mcp --http`` and a real worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.processes import eventually, live_members
from tests.worker.mcp.raw import TASKS, Raw, RpcError
from tests.worker.mcp.support import USER, Deployment
from tests.worker.support import Spawn, Spawned, free_port, hermetic_env, toolcalls
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, EventKind

STATE_KEY = "mcp-test-state-key-0123456789abcdef0123456789"
"""The sealing key of the tests' servers (``[mcp] state_key_env``)."""


def serve(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment, *extra: str
) -> tuple[str, Spawned]:
    """``toolcalls mcp --http`` for the deployment, sealing with ``STATE_KEY``."""
    port = free_port()
    server = spawn(
        *("mcp", "--http", f"127.0.0.1:{port}", "--config", str(deployment.path)),
        *("--address", address, *extra),
        env=hermetic_env(
            tmp_path,
            TOOLCALLS_MCP_TOKEN="mcp-test-token-0123456789abcdef",
            TOOLCALLS_MCP_STATE_KEY=STATE_KEY,
        ),
    )
    server.wait_for_line("MCP server at")
    return f"http://127.0.0.1:{port}/mcp", server


def status_is(*statuses: str) -> Any:
    return lambda task: task["status"] in statuses


async def test_a_call_that_ends_within_the_grace_is_answered_as_usual(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment, worker: None
) -> None:
    url, _ = serve(spawn, tmp_path, address, deployment)
    discovered = await Raw(url).request("server/discover", {})
    assert discovered["capabilities"]["extensions"] == {TASKS: {}}
    result = await Raw(url).call("calculator", {"expression": "6 * 7"})
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"expression": "6 * 7", "result": 42}


async def test_tasks_update_answers_ask_user(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment, worker: None
) -> None:
    url, _ = serve(spawn, tmp_path, address, deployment)
    raw = Raw(url)
    created = await raw.call("ask_user", {"question": "Which colour?", "options": ["red"]})
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert (created["ttlMs"], created["pollIntervalMs"]) == (None, 2000)
    task_id = created["taskId"]
    asking = await raw.until(task_id, status_is("input_required"), what="input_required")
    assert asking["resultType"] == "complete"
    [(key, request)] = asking["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form"
    assert request["params"]["message"] == "Which colour?"
    assert request["params"]["requestedSchema"]["properties"]["choice"]["enum"] == ["red"]
    # A key that is not outstanding is ignored; the answer goes to the call.
    ack = await raw.update(task_id, {"nope": {"action": "accept", "content": {"answer": "x"}}})
    assert ack["resultType"] == "complete"
    assert set(ack) == {"resultType", "_meta"}
    ack = await raw.update(task_id, {key: {"action": "accept", "content": {"answer": "teal"}}})
    assert ack["resultType"] == "complete"
    done = await raw.until(task_id, status_is("completed"), what="completed")
    result = done["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["answer"] == "teal"
    assert result["_meta"]["toolcalls/status"] == "completed"
    assert "inputRequests" not in done


async def test_tasks_cancel_kills_a_running_commands_process_group(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    worker: None,
    client: Client,
) -> None:
    url, _ = serve(spawn, tmp_path, address, deployment)
    raw = Raw(url)
    started = deployment.root / "started"
    created = await raw.call("run_shell", {"command": f"echo $$ > {started}; sleep 100 & wait"})
    assert created["resultType"] == "task"
    task_id = created["taskId"]
    await eventually(lambda: started.exists() and started.read_text().strip() != "")
    pgid = int(started.read_text())
    assert live_members(pgid) != []
    running = await raw.get(task_id)
    assert running["status"] == "working"
    assert running["statusMessage"] == "run_shell: running"
    acked = await raw.cancel(task_id)
    assert acked["resultType"] == "complete"
    await eventually(lambda: live_members(pgid) == [], timeout=30, what="the group killed")
    # run_shell is a write: canceled while it ran it is uncertain, and the task is cancelled.
    cancelled = await raw.until(task_id, status_is("cancelled"), what="cancelled")
    assert cancelled["statusMessage"].startswith("uncertain: ")
    assert "the effect may have begun" in cancelled["statusMessage"]
    assert "result" not in cancelled
    workflow_id = cancelled["_meta"]["toolcalls/workflow_id"]
    assert created["_meta"]["toolcalls/workflow_id"] == workflow_id
    recorded = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    assert recorded.status is CallStatus.UNCERTAIN
    assert [e.kind for e in recorded.events][-2:] == [
        EventKind.CANCEL_REQUESTED,
        EventKind.FINISHED,
    ]


async def test_a_task_id_is_bound_to_its_principal_and_cannot_be_altered(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment, worker: None
) -> None:
    url, _ = serve(spawn, tmp_path, address, deployment)
    raw = Raw(url)
    created = await raw.call("ask_user", {"question": "Mine?", "options": None})
    task_id = created["taskId"]
    assert (await raw.get(task_id))["taskId"] == task_id
    # Another principal: a server of the same deployment and key whose token is another user's.
    deployment.path.write_text(
        deployment.path.read_text().replace(f'user = "{USER}"', 'user = "someone-else"')
    )
    other_url, _ = serve(spawn, tmp_path, address, deployment)
    altered = task_id[:-4] + ("AAAA" if not task_id.endswith("AAAA") else "BBBB")
    for target, sent in ((other_url, task_id), (url, altered), (url, "mcp-" + "0" * 64)):
        for method in ("tasks/get", "tasks/cancel"):
            with pytest.raises(RpcError) as refused:
                await Raw(target).request(method, {"taskId": sent}, name=sent)
            assert (refused.value.code, refused.value.message) == (
                -32602,
                "Failed to retrieve task: Task not found",
            )
        with pytest.raises(RpcError) as refused:
            await Raw(target).update(sent, {"k": {"action": "accept"}})
        assert refused.value.code == -32602
    # A client that does not declare the extension is told what it lacks.
    plain = Raw(url, capabilities={})
    with pytest.raises(RpcError) as missing:
        await plain.get(task_id)
    assert missing.value.code == -32021
    assert missing.value.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    # The task is still there for its own client.
    assert (await raw.get(task_id))["status"] in ("working", "input_required")
    await raw.cancel(task_id)


async def test_an_approval_form_is_answered_through_tasks_update(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    worker: None,
    client: Client,
) -> None:
    deployment.write("approve_via_elicitation = true")
    url, _ = serve(spawn, tmp_path, address, deployment)
    raw = Raw(url)
    created = await raw.call("set_value", {"key": "colour", "value": '"blue"'})
    task_id = created["taskId"]
    asking = await raw.until(task_id, status_is("input_required"), what="input_required")
    [(key, request)] = asking["inputRequests"].items()
    assert request["params"]["mode"] == "form"
    assert request["params"]["message"].startswith("Approve this set_value call?")
    decision = {"action": "accept", "content": {"decision": "approve", "reason": "as a task"}}
    await raw.update(task_id, {key: decision})
    done = await raw.until(task_id, status_is("completed"), what="completed")
    assert done["result"]["structuredContent"]["created"] is True
    workflow_id = done["_meta"]["toolcalls/workflow_id"]
    recorded = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    assert recorded.approval is not None
    assert (recorded.approval.approver, recorded.approval.reason) == (USER, "as a task")


async def test_a_call_that_ended_without_a_result_is_a_failed_task(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    worker: None,
    client: Client,
) -> None:
    url, _ = serve(spawn, tmp_path, address, deployment)
    raw = Raw(url)
    created = await raw.call("ask_user", {"question": "Still there?", "options": None})
    workflow_id = created["_meta"]["toolcalls/workflow_id"]
    await client.get_workflow_handle(workflow_id).terminate(reason="gone")
    failed = await raw.until(created["taskId"], status_is("failed"), what="failed")
    message = f"{workflow_id}: the call ended without a result"
    assert failed["statusMessage"] == message
    assert failed["error"] == {"code": -32603, "message": message}


async def test_a_short_state_key_and_a_bad_inbox_url_stop_the_command(
    tmp_path: Path, address: str, deployment: Deployment
) -> None:
    args = ("mcp", "--config", str(deployment.path), "--address", address)
    short = hermetic_env(tmp_path, TOOLCALLS_MCP_STATE_KEY="too-short")
    done = await toolcalls(tmp_path, *args, env=short)
    assert (done.code, done.stderr) == (
        2,
        "toolcalls: mcp.state_key_env: the key in TOOLCALLS_MCP_STATE_KEY has fewer than 32 "
        "characters\n",
    )
    done = await toolcalls(tmp_path, *args, "--inbox-url", "ftp://inbox.example.com")
    assert done.code == 2
    assert done.stderr.endswith(
        "argument --inbox-url: 'ftp://inbox.example.com' is not an http(s) URL (the inbox's "
        "public address)\n"
    )
    deployment.write('inbox_url = "https://inbox.example.com/?x=1"')
    done = await toolcalls(tmp_path, *args)
    assert done.code == 2
    assert "the inbox's URL takes no query or fragment" in done.stderr
    assert len(done.stderr.splitlines()) == 1
