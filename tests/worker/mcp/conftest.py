"""Fixtures for the MCP front: a deployment file, a worker serving it, MCP client sessions.

Every session is the SDK's own ``ClientSession`` talking to a real ``toolcalls mcp`` process
(over stdio, or streamable HTTP); the worker is a real one on the session's dev server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.harness import running_worker
from tests.worker.mcp.support import Deployment, Open, Recorder, serve_http, stdio_session
from tests.worker.support import Spawn
from toolcalls.worker.config import load_config
from toolcalls.workflows.reach.client import ToolCallClient


@pytest.fixture
def deployment(tmp_path: Path, task_queue: str) -> Deployment:
    """The test's deployment file (``Deployment.write`` changes its ``[mcp]`` section)."""
    return Deployment(tmp_path, task_queue)


@pytest.fixture
async def worker(client: Client, deployment: Deployment) -> AsyncIterator[None]:
    """A worker serving the deployment for the whole test, seen polling before the test starts
    (the front says there is no worker until the server has seen it poll)."""
    async with running_worker(client, load_config(deployment.path)):
        calls = ToolCallClient(client, task_queue=deployment.task_queue)
        for _ in range(300):
            if await calls.worker_serving(deployment.task_queue):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"no worker was seen polling {deployment.task_queue}")
        yield


@pytest.fixture
def session(tmp_path: Path, address: str, deployment: Deployment) -> Open:
    """Open an MCP session over stdio to ``toolcalls mcp`` for the deployment."""

    @asynccontextmanager
    async def open_session(
        recorder: Recorder | None = None, *extra: str, client_info: Any = None
    ) -> AsyncIterator[Any]:
        async with stdio_session(
            tmp_path, address, deployment.path, recorder, *extra, client_info=client_info
        ) as found:
            yield found

    return open_session


@pytest.fixture
def url(spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment) -> str:
    """A ``toolcalls mcp --http`` process for the deployment; its endpoint."""
    return serve_http(spawn, tmp_path, address, deployment)
