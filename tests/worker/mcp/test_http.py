"""``toolcalls mcp --http``: streamable HTTP with the SDK's client, behind the bearer token."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import MCPError
from temporalio.client import Client

from tests.worker.mcp.support import (
    TOKEN,
    Deployment,
    Recorder,
    accept,
    http_session,
    text_of,
    workflow_of,
)
from tests.worker.support import Spawn, free_port, hermetic_env
from toolcalls.workflows.call.tool_call import ToolCallWorkflow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


async def test_calls_over_http_with_the_token(url: str, worker: None, client: Client) -> None:
    recorder = Recorder(accept({"answer": "over http"}))
    async with http_session(url, recorder=recorder) as mcp:
        listed = await mcp.list_tools()
        sum_ = await mcp.call_tool("calculator", {"expression": "6 * 7"})
        asked = await mcp.call_tool("ask_user", {"question": "Over what?", "options": None})
    assert "calculator" in [tool.name for tool in listed.tools]
    assert sum_.structured_content == {"expression": "6 * 7", "result": 42}
    assert not asked.is_error, text_of(asked)
    assert asked.structured_content is not None
    assert asked.structured_content["answer"] == "over http"
    recorded = await client.get_workflow_handle_for(
        ToolCallWorkflow.run, workflow_of(sum_)
    ).result()
    assert recorded.output == sum_.structured_content


async def test_requests_without_the_token_are_refused(url: str, worker: None) -> None:
    async with httpx.AsyncClient() as http:
        missing = await http.post(url, json=INITIALIZE)
        wrong = await http.post(url, json=INITIALIZE, headers={"Authorization": "Bearer nope"})
        basic = await http.post(url, json=INITIALIZE, headers={"Authorization": f"Basic {TOKEN}"})
    assert (missing.status_code, missing.json()) == (401, {"error": "missing bearer token"})
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert (wrong.status_code, wrong.json()) == (403, {"error": "token not accepted"})
    assert basic.status_code == 401
    assert "mcp-session-id" not in missing.headers
    with pytest.raises(ExceptionGroup) as failed:
        async with http_session(url, token="another-token-0123456789"):
            pass
    assert failed.group_contains(MCPError, match="Server returned an error response")


async def test_http_needs_its_token_variable(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment
) -> None:
    server = spawn(
        *("mcp", "--http", f"127.0.0.1:{free_port()}", "--config", str(deployment.path)),
        *("--address", address),
    )
    code = await asyncio.to_thread(server.finish, 30)
    assert code == 2
    assert "".join(server.stderr).strip() == (
        "toolcalls: mcp.token_env: toolcalls mcp --http needs a bearer token in the variable "
        "TOOLCALLS_MCP_TOKEN"
    )


async def test_the_same_request_of_the_same_session_is_the_same_call(
    url: str, worker: None, client: Client
) -> None:
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "calculator", "arguments": {"expression": "2 ** 10"}},
    }
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        opened = await http.post(url, json=INITIALIZE)
        assert opened.status_code == 200, opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=done, headers=session)).status_code == 202
        first, again = [
            sse_result(await http.post(url, json=call, headers=session)) for _ in range(2)
        ]
        other = await http.post(url, json={**call, "id": 6}, headers=session)
    assert first == again
    assert first["structuredContent"] == {"expression": "2 ** 10", "result": 1024}
    workflow_id = first["_meta"]["toolcalls/workflow_id"]
    assert sse_result(other)["_meta"]["toolcalls/workflow_id"] != workflow_id
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
    assert (await handle.result()).output == first["structuredContent"]


def sse_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result in a streamable HTTP response (an SSE stream or plain JSON)."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        messages = [response.json()]
    else:
        messages = [
            json.loads(line.removeprefix("data:"))
            for line in response.text.splitlines()
            if line.startswith("data:") and line.removeprefix("data:").strip()
        ]
    [found] = [message for message in messages if "result" in message or "error" in message]
    assert "result" in found, found
    result: dict[str, Any] = found["result"]
    return result


async def test_a_listen_address_that_is_not_host_port_is_a_usage_error(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment
) -> None:
    server = spawn(
        *("mcp", "--http", "localhost", "--config", str(deployment.path), "--address", address),
        env=hermetic_env(tmp_path, TOOLCALLS_MCP_TOKEN=TOKEN),
    )
    assert await asyncio.to_thread(server.finish, 30) == 2
    assert "".join(server.stderr).strip() == (
        "toolcalls: mcp: 'localhost' is not HOST:PORT (--http, [mcp] listen)"
    )
