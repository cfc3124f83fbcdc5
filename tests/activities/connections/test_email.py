"""The email tools on each principal's own Outlook mailbox (``[email] connection =
"microsoft"``), through a real ``ToolCallWorkflow`` and worker: Graph replayed at the transport,
the tokens in the real store."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
from temporalio.client import Client

from tests.activities.connections.conftest import SECRET_ENV
from tests.activities.email.services import Routes
from tests.support.connections import PUBLIC_URL, history_text
from tests.support.harness import make_config, start_call
from tests.support.http_servers import MapResolver
from tests.support.oauth_server import CLIENT_ID, OAuthServer
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from toolcalls.activities.connections import Tokens
from toolcalls.activities.email.outlook import OutlookEmail
from toolcalls.activities.email.tools import EmailTools
from toolcalls.activities.network.service import service_guard
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.run import build_worker
from toolcalls.workflows.models.call import CallStatus, ErrorCode
from toolcalls.workflows.models.principal import Principal


async def test_each_principal_lists_their_own_mailbox(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    provider = {
        "name": "microsoft",
        "client_id": CLIENT_ID,
        "client_secret_env": SECRET_ENV,
        "authorize_url": oauth.url("/authorize"),
        "token_url": oauth.url("/token"),
    }
    config = make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "list_email_messages"],
        state_dir=str(tmp_path / "state"),
        email={"backend": "outlook", "connection": "microsoft"},
        connections={"public_url": PUBLIC_URL, "providers": [provider]},
    )
    connections = deployment_connections(config, os.environ)
    assert connections is not None
    tokens = {}
    for who in ("alice", "bob"):
        access, refresh = oauth.tokens_for(who)
        tokens[who] = access
        connections.store.put("microsoft", who, Tokens(access, refresh, None, ()))
    routes = Routes()
    routes.on("GET", "/v1.0/me/messages", {"value": []})
    guard = service_guard(
        resolver=MapResolver({"graph.microsoft.com": ["203.0.113.20"]}),
        transport=httpx.MockTransport(routes),
    )
    settings = config.email  # type: ignore[attr-defined]
    tools = EmailTools(settings, OutlookEmail(settings, {}, guard=guard, connections=connections))
    worker = build_worker(
        client,
        config,
        families=ALL_FAMILIES,
        instances={ProbeTools: ProbeTools(), EmailTools: tools},
    )
    async with worker:
        handles = {
            who: await start_call(
                client, task_queue, "list_email_messages", {}, principal=Principal(id=who)
            )
            for who in ("alice", "bob")
        }
        nobody = await start_call(client, task_queue, "list_email_messages", {})
        results = {who: await asyncio.wait_for(h.result(), 30) for who, h in handles.items()}
        refused = await asyncio.wait_for(nobody.result(), 30)
        histories = [await history_text(h) for h in handles.values()]
    for result in results.values():
        assert result.status is CallStatus.COMPLETED, result.error
    assert sorted(r.headers["authorization"] for r in routes.requests) == [
        f"Bearer {tokens['alice']}",
        f"Bearer {tokens['bob']}",
    ]
    assert refused.error is not None
    assert refused.error.code is ErrorCode.CONNECTION_REQUIRED
    for history in histories:
        for token in oauth.issued:
            assert token not in history
