"""A raw JSON-RPC client of the 2026-07-28 protocol over streamable HTTP, for the Tasks extension.

The SDK's client has no API for ``tasks/*``: this one sends the messages as the extension's
specification gives them (``io.modelcontextprotocol/tasks``), each request carrying the per-request
envelope (protocol version, client capabilities, client info) and the routing headers
(``MCP-Protocol-Version``, ``Mcp-Method``, and ``Mcp-Name``: the tool's name or the task id).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.worker.mcp.support import TOKEN

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
WITH_TASKS: dict[str, Any] = {"extensions": {TASKS: {}}, "elicitation": {"form": {}, "url": {}}}
"""A client that takes tasks, forms and links."""


class RpcError(Exception):
    """A JSON-RPC error response."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error['code']}: {error['message']}")
        self.code: int = error["code"]
        self.message: str = error["message"]
        self.data: Any = error.get("data")


@dataclass
class Raw:
    """Requests to one endpoint with one bearer token, declaring ``capabilities``."""

    url: str
    token: str = TOKEN
    capabilities: dict[str, Any] = field(default_factory=lambda: dict(WITH_TASKS))
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def request(self, method: str, params: dict[str, Any], name: str | None = None) -> Any:
        """The result of ``method``; raises ``RpcError`` for an error response."""
        meta = {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "raw-tasks-client", "version": "1"},
        }
        request_id = next(self.ids)
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": {**params, "_meta": {**params.get("_meta", {}), **meta}},
        }
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            "Mcp-Method": method,
        }
        if name is not None:
            headers["Mcp-Name"] = name
        async with httpx.AsyncClient(timeout=60) as http:
            response = await http.post(self.url, json=body, headers=headers)
        # An error answers with its HTTP status (400, 404) and the JSON-RPC error as the body.
        message = _message(response, request_id)
        if "error" in message:
            raise RpcError(message["error"])
        return message["result"]

    async def call(self, tool: str, arguments: dict[str, Any], **meta: Any) -> Any:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return await self.request("tools/call", params, name=tool)

    async def get(self, task_id: str) -> Any:
        return await self.request("tasks/get", {"taskId": task_id}, name=task_id)

    async def update(self, task_id: str, responses: dict[str, Any]) -> Any:
        params = {"taskId": task_id, "inputResponses": responses}
        return await self.request("tasks/update", params, name=task_id)

    async def cancel(self, task_id: str) -> Any:
        return await self.request("tasks/cancel", {"taskId": task_id}, name=task_id)

    async def until(
        self, task_id: str, done: Callable[[Any], bool], timeout: float = 60, what: str = ""
    ) -> Any:
        """Poll ``tasks/get`` until ``done`` holds for the task; that task."""
        deadline = time.monotonic() + timeout
        task = None
        while time.monotonic() < deadline:
            task = await self.get(task_id)
            if done(task):
                return task
            await asyncio.sleep(0.3)
        raise AssertionError(f"the task never got {what or 'there'}: {task}")


def _message(response: httpx.Response, request_id: int) -> dict[str, Any]:
    """The response to ``request_id``: the JSON body, or the SSE event that carries it."""
    if response.status_code >= 500 or response.status_code in (401, 403):
        raise AssertionError(f"HTTP {response.status_code}: {response.text[:500]}")
    if response.headers.get("content-type", "").startswith("application/json"):
        found: dict[str, Any] = response.json()
        return found
    for line in response.text.splitlines():
        if line.startswith("data:"):
            found = json.loads(line[5:])
            if found.get("id") == request_id:
                return found
    raise AssertionError(f"no response to request {request_id}: {response.text[:500]}")
