"""Helpers for the MCP front's tests: the deployment file, a recording client, sessions."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.support.processes import SYSTEM_PATH
from tests.worker.support import TOOLCALLS, Spawn, free_port, hermetic_env
from toolcalls.worker.mcp.front import IDEMPOTENCY_KEY

TOOLS = ["calculator", "current_datetime", "ask_user", "run_shell", "get_value", "set_value"]
TOKEN = "mcp-test-token-0123456789abcdef"
"""The bearer token of ``toolcalls mcp --http`` in the tests."""
USER = "mcp-tester"
"""The ``[mcp] user`` of the test deployments: who answers and decides through the client."""
APPROVE_AT = re.compile(r"toolcalls approve (\S+)")
ANSWER_AT = re.compile(r"toolcalls answer (\S+) TEXT")

Elicit = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
Open = Callable[..., AbstractAsyncContextManager[ClientSession]]
"""The ``session`` fixture: open an MCP session over stdio (optionally with a ``Recorder``)."""


class Deployment:
    """A deployment file: builtin tools, a shell, storage whose writes need approval."""

    def __init__(self, tmp_path: Path, task_queue: str) -> None:
        self.tmp_path = tmp_path
        self.task_queue = task_queue
        self.root = tmp_path / "root"
        self.root.mkdir(exist_ok=True)
        self.path = tmp_path / "toolcalls.toml"
        self.write()

    def write(self, mcp: str = "", *, extra: str = "") -> Path:
        """Write the file with ``mcp`` as the body of its ``[mcp]`` section."""
        self.path.write_text(
            f"""
task_queue = "{self.task_queue}"
tools = {json.dumps(TOOLS)}
state_dir = "{self.tmp_path / "state"}"

[worker]
isolate_workflows = true

[ceiling]
default_effect = "allow"
[ceiling.rules]
"storage.write" = "require_approval"

[shell]
cwd = "{self.root}"
env = {{ PATH = "{SYSTEM_PATH}" }}
kill_grace_seconds = 0.5
timeout_seconds = 60

[storage]
allow_write = true

[activities.timeouts.run_shell]
start_to_close_seconds = 90
heartbeat_seconds = 1

[mcp]
user = "{USER}"
{mcp}
{extra}
""",
            encoding="utf-8",
        )
        return self.path


class Recorder:
    """An MCP client's callbacks: progress messages it got, forms it was shown and answers."""

    def __init__(self, answer: Elicit | None = None) -> None:
        self.progress: list[str] = []
        self.forms: list[types.ElicitRequestParams] = []
        self.answer = answer

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(message or "")

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.forms.append(params)
        assert self.answer is not None, f"asked unexpectedly: {params.message}"
        return await self.answer(params)

    async def workflow_id(self, timeout: float = 30) -> str:
        """The workflow id the progress names once the call waits for approval."""
        return await self._named(APPROVE_AT, timeout)

    async def waiting_for_answer(self, timeout: float = 30) -> str:
        """The workflow id the progress names once the call waits for an answer."""
        return await self._named(ANSWER_AT, timeout)

    async def _named(self, pattern: re.Pattern[str], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in self.progress:
                if match := pattern.search(message):
                    return match.group(1)
            await asyncio.sleep(0.1)
        raise AssertionError(f"no {pattern.pattern!r} in the progress: {self.progress}")


def accept(content: dict[str, Any]) -> Elicit:
    """An elicitation answer that accepts the form with ``content``."""

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=content)

    return answer


def keyed(prefix: str) -> types.RequestParamsMeta:
    """A request ``_meta`` with a fresh idempotency key."""
    return cast(types.RequestParamsMeta, {IDEMPOTENCY_KEY: f"{prefix}-{uuid.uuid4()}"})


def workflow_of(result: types.CallToolResult) -> str:
    """The workflow id a result names in its ``_meta``."""
    assert result.meta is not None
    workflow_id: str = result.meta["toolcalls/workflow_id"]
    return workflow_id


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@asynccontextmanager
async def stdio_session(
    tmp_path: Path,
    address: str,
    config: Path,
    recorder: Recorder | None = None,
    *extra: str,
    client_info: types.Implementation | None = None,
) -> AsyncIterator[ClientSession]:
    """A ``ClientSession`` over stdio to ``toolcalls mcp`` (its stderr in ``tmp_path``), naming
    itself ``client_info`` (the SDK's default otherwise)."""
    server = StdioServerParameters(
        command=TOOLCALLS,
        args=["mcp", "--config", str(config), "--address", address, *extra],
        env=hermetic_env(tmp_path),
        cwd=tmp_path,
    )
    with (tmp_path / "mcp-stderr.log").open("a", encoding="utf-8") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            elicit = recorder.elicit if recorder is not None and recorder.answer else None
            async with ClientSession(
                read, write, elicitation_callback=elicit, client_info=client_info
            ) as session:
                await session.initialize()
                yield session


def serve_http(spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment) -> str:
    """Start ``toolcalls mcp --http`` for the deployment file as it is now; its endpoint."""
    port = free_port()
    server = spawn(
        *("mcp", "--http", f"127.0.0.1:{port}", "--config", str(deployment.path)),
        *("--address", address),
        env=hermetic_env(tmp_path, TOOLCALLS_MCP_TOKEN=TOKEN),
    )
    line = server.wait_for_line("MCP server at")
    assert line.strip() == f"MCP server at http://127.0.0.1:{port}/mcp (6 tools)"
    return f"http://127.0.0.1:{port}/mcp"


@asynccontextmanager
async def http_session(
    url: str, token: str = TOKEN, recorder: Recorder | None = None
) -> AsyncIterator[ClientSession]:
    """An MCP session over streamable HTTP with the SDK's client, with the bearer ``token``."""
    headers = {"Authorization": f"Bearer {token}"}
    elicit = recorder.elicit if recorder is not None and recorder.answer else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session
