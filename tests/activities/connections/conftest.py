"""The connection tests' deployment: a real OAuth authorization server on loopback
(``tests.support.oauth_server``), the calendar's Google replayed at the transport
(``tests.support.connections``), and the real inbox reached in-process
(``tests.worker.inbox.support.Visitor``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.connections import PUBLIC_URL, TOOLS
from tests.support.harness import make_config
from tests.support.oauth_server import CLIENT_ID, CLIENT_SECRET, OAuthServer, oauth_server
from tests.worker.inbox.support import PASSWORDS, Visitor, fast_hash
from toolcalls.activities.connections import Connections
from toolcalls.worker.config import Config
from toolcalls.worker.inbox.app import app
from toolcalls.worker.inbox.base import Inbox
from toolcalls.worker.inbox.settings import InboxSection, InboxUser
from toolcalls.workflows.reach.client import ToolCallClient

SECRET_ENV = "TOOLCALLS_TEST_OAUTH_CLIENT_SECRET"


@pytest.fixture
def oauth() -> Iterator[OAuthServer]:
    with oauth_server(f"{PUBLIC_URL}/connections/callback") as server:
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
        connections={"public_url": PUBLIC_URL, "providers": [provider], **connections},
    )


def inbox_visitor(client: Client, connections: Connections) -> Visitor:
    """The inbox with the consent pages, alice and bob as its users."""
    users = [
        InboxUser(name=name, password_hash=fast_hash(PASSWORDS[name])) for name in ("alice", "bob")
    ]
    inbox = Inbox(
        ToolCallClient(client),
        InboxSection(users=users),
        b"k" * 32,
        secure=False,
        connections=connections,
    )
    return Visitor(app(inbox))
