"""A deployment with ``[slack]``, its worker posting through a fake Slack Web API, and the inbox's
app with the interactions endpoint served by uvicorn on a loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from temporalio.client import Client

from tests.worker.chat.support import (
    BOT_ENV,
    BOT_TOKEN,
    SIGNING_ENV,
    SIGNING_SECRET,
    FakeSlack,
    form_body,
    signed_headers,
    write_deployment,
)
from toolcalls.worker.chat.slack import (
    PATH,
    RequestVerifier,
    SlackAPI,
    SlackInteractions,
)
from toolcalls.worker.config import Config, load_config
from toolcalls.worker.inbox.app import app
from toolcalls.worker.inbox.base import Inbox
from toolcalls.worker.run import build_worker
from toolcalls.workflows.reach.client import ToolCallClient

ENVIRON = {BOT_ENV: BOT_TOKEN, SIGNING_ENV: SIGNING_SECRET}


@dataclass(frozen=True)
class Deployment:
    path: Path
    config: Config
    task_queue: str


@pytest.fixture
def deployment(tmp_path: Path, task_queue: str) -> Deployment:
    path = write_deployment(tmp_path, task_queue)
    return Deployment(path, load_config(path), task_queue)


@pytest.fixture
def slack() -> FakeSlack:
    return FakeSlack()


def api(slack: FakeSlack) -> SlackAPI:
    return SlackAPI(BOT_ENV, ENVIRON, transport=slack.transport())


@pytest.fixture
async def worker(client: Client, deployment: Deployment, slack: FakeSlack) -> AsyncIterator[None]:
    """The deployment's worker, built from its file, posting to the fake Slack."""
    async with build_worker(client, deployment.config, instances={SlackAPI: api(slack)}):
        yield


@pytest.fixture
def calls(client: Client, deployment: Deployment) -> ToolCallClient:
    return ToolCallClient(client, task_queue=deployment.task_queue)


@pytest.fixture
def endpoint(calls: ToolCallClient, deployment: Deployment, slack: FakeSlack) -> SlackInteractions:
    section = deployment.config.slack
    assert section is not None
    link = deployment.config.notifications.link
    return SlackInteractions(
        section,
        api(slack),
        calls,
        RequestVerifier(SIGNING_SECRET),
        lambda workflow_id: link.format(workflow_id=workflow_id, namespace="default"),
    )


class _Quiet(uvicorn.Server):
    """uvicorn leaving the test process's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Interactions:
    """Slack's side of ``POST /slack/interactions``, over HTTP to the served inbox."""

    def __init__(self, http: httpx.AsyncClient, endpoint: SlackInteractions) -> None:
        self.http = http
        self.endpoint = endpoint

    async def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return await self.http.post(PATH, content=body, headers=headers)

    async def send(self, payload: dict[str, Any], **signing: Any) -> httpx.Response:
        """Sign ``payload`` as Slack does and post it; wait for what it set going."""
        body = form_body(payload)
        response = await self.post(body, signed_headers(body, **signing))
        await self.endpoint.idle()
        return response


@pytest.fixture
async def interactions(
    calls: ToolCallClient, deployment: Deployment, endpoint: SlackInteractions
) -> AsyncIterator[Interactions]:
    """The inbox's app (with the Slack endpoint) served by uvicorn on a loopback port."""
    inbox = Inbox(calls, deployment.config.inbox, b"a test session secret of 32 bytes")
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = _Quiet(uvicorn.Config(app(inbox, slack=endpoint), log_level="warning", lifespan="off"))
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        assert not serving.done(), "the inbox did not start"
        await asyncio.sleep(0.05)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        yield Interactions(http, endpoint)
    server.should_exit = True
    await serving
    sock.close()
