"""A deployment whose calendar acts with each principal's own Google account.

The OAuth authorization server is real (``tests.support.oauth_server`` on loopback); Google
Calendar is replayed at the HTTP transport under the production guard (``FakeGoogle``), which
answers each listing with one event named after the account its bearer token belongs to; the
inbox is the real application, reached in-process (``tests.worker.inbox.support.Visitor``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from tests.support.calendars import GOOGLE_HOST, PUBLIC_ADDRESS, google_event, google_page
from tests.support.harness import make_config
from tests.support.http_servers import MapResolver
from tests.support.oauth_server import CLIENT_ID, CLIENT_SECRET, OAuthServer, oauth_server
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from tests.worker.inbox.support import ORIGIN, PASSWORDS, Visitor, fast_hash
from toolcalls.activities.calendar import CalendarTools
from toolcalls.activities.connections import Connections
from toolcalls.activities.network.service import service_guard
from toolcalls.worker.config import Config
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.inbox.app import app
from toolcalls.worker.inbox.base import Inbox
from toolcalls.worker.inbox.settings import InboxSection, InboxUser
from toolcalls.worker.run import build_worker
from toolcalls.workflows.reach.client import ToolCallClient

SECRET_ENV = "TOOLCALLS_TEST_OAUTH_CLIENT_SECRET"
TOOLS = [*ALL_TOOL_NAMES, "list_calendar_events", "create_calendar_event"]
WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
_BEARER = re.compile(r"Bearer at-([a-z]+)-\d+")


@dataclass
class FakeGoogle:
    """Google Calendar's ``events.list``: one event, titled after the token's account."""

    authorizations: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        header = request.headers.get("authorization", "")
        with self._lock:
            self.authorizations.append(header)
        match = _BEARER.fullmatch(header)
        if match is None:
            return httpx.Response(401, json={"error": {"code": 401, "message": "bad token"}})
        account = match.group(1)
        event = google_event(
            f"e{account}",
            f"{account}'s standup",
            "2026-01-05T09:00:00+01:00",
            "2026-01-05T09:15:00+01:00",
        )
        return google_page([event])


@pytest.fixture
def oauth() -> Iterator[OAuthServer]:
    with oauth_server(f"{ORIGIN}/connections/callback") as server:
        yield server


@pytest.fixture(autouse=True)
def client_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, CLIENT_SECRET)


def deployment(tmp_path: Path, task_queue: str, oauth: OAuthServer, **connections: Any) -> Config:
    provider = {
        "name": "google",
        "client_id": CLIENT_ID,
        "client_secret_env": SECRET_ENV,
        "authorize_url": oauth.url("/authorize"),
        "token_url": oauth.url("/token"),
    }
    return make_config(
        task_queue,
        tools=TOOLS,
        state_dir=str(tmp_path / "state"),
        calendar={"backend": "google", "connection": "google", "account": "the principal's"},
        connections={"public_url": ORIGIN, "providers": [provider], **connections},
    )


@dataclass
class Deployment:
    config: Config
    connections: Connections
    google: FakeGoogle


@asynccontextmanager
async def running(client: Client, config: Config) -> AsyncIterator[Deployment]:
    """A real worker for ``config``; its calendar's Google is ``FakeGoogle``."""
    import os

    connections = deployment_connections(config, os.environ)
    assert connections is not None
    google = FakeGoogle()
    guard = service_guard(
        resolver=MapResolver({GOOGLE_HOST: [PUBLIC_ADDRESS]}),
        transport=httpx.MockTransport(google),
    )
    tools = CalendarTools(
        config.calendar,  # type: ignore[attr-defined]
        guard=guard,
        connections=connections,
    )
    worker = build_worker(
        client,
        config,
        families=ALL_FAMILIES,
        instances={ProbeTools: ProbeTools(), CalendarTools: tools},
    )
    async with worker:
        yield Deployment(config, connections, google)


def inbox_visitor(client: Client, connections: Connections) -> Visitor:
    """The inbox with the consent pages, alice and bob as its users."""
    users = [
        InboxUser(name=name, password_hash=fast_hash(PASSWORDS[name])) for name in ("alice", "bob")
    ]
    section = InboxSection(users=users)
    inbox = Inbox(ToolCallClient(client), section, b"k" * 32, secure=False, connections=connections)
    return Visitor(app(inbox))
