"""Fixtures for the inbox: one deployment file, a worker for it, and the inbox's app."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.payloads import keys
from tests.worker.inbox.support import INLINE_KEYS_ENV, Visitor, write_deployment
from toolcalls.worker.config import Config, load_config
from toolcalls.worker.inbox.app import app
from toolcalls.worker.inbox.base import Inbox
from toolcalls.worker.inbox.settings import with_inbox_groups
from toolcalls.worker.run import build_worker
from toolcalls.workflows.reach.client import ToolCallClient

SECRET = b"a test session secret of 32 bytes"


@dataclass(frozen=True)
class Deployment:
    """The deployment's configuration file, loaded, and its task queue."""

    path: Path
    config: Config
    task_queue: str


@pytest.fixture
def deployment(tmp_path: Path, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> Deployment:
    monkeypatch.setenv(INLINE_KEYS_ENV, keys("inbox1"))
    path = write_deployment(tmp_path, task_queue, inline=True)
    return Deployment(path, load_config(path), task_queue)


@pytest.fixture
async def worker(client: Client, deployment: Deployment) -> AsyncIterator[None]:
    """A worker serving the deployment, built from its file like ``toolcalls worker``."""
    async with build_worker(client, deployment.config):
        yield


@pytest.fixture
def calls(client: Client, deployment: Deployment) -> ToolCallClient:
    return ToolCallClient(client, task_queue=deployment.task_queue)


@pytest.fixture
def inbox(calls: ToolCallClient, deployment: Deployment) -> Inbox:
    approvers = with_inbox_groups(deployment.config.approvers, deployment.config.inbox.users)
    return Inbox(calls, deployment.config.inbox, SECRET, approvers=approvers)


Visit = Callable[..., Visitor]


@pytest.fixture
async def visit(inbox: Inbox) -> AsyncIterator[Visit]:
    """Visitors of the inbox's app (``visit(address=..., origin=...)``), closed at the end."""
    opened: list[Visitor] = []
    served = app(inbox)

    def open_(**options: Any) -> Visitor:
        visitor = Visitor(served, **options)
        opened.append(visitor)
        return visitor

    yield open_
    for visitor in opened:
        await visitor.http.aclose()
