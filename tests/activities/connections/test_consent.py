"""Per-principal connections through a real ``ToolCallWorkflow``, worker, store and OAuth server.

A call whose principal has not connected waits (``awaiting_connection``) with a consent link;
following it through the inbox and the authorization server stores the principal's tokens and
lets the call go on, acting with that principal's token only. No token reaches a history, a
result or a log line.
"""

from __future__ import annotations

import asyncio
import html
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from temporalio.client import Client

from tests.activities.connections.conftest import deployment, inbox_visitor
from tests.support.connections import WEEK, Deployment, history_text, running
from tests.support.harness import decision, pending_approval, start_call, wait_for
from tests.support.oauth_server import OAuthServer
from toolcalls.activities.connections import Tokens
from toolcalls.worker.render import view_text
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, Phase
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.reach.client import ToolCallClient

ALICE = Principal(id="alice")
BOB = Principal(id="bob")


async def consent_as(
    client: Client, dep: Deployment, oauth: OAuthServer, url: str, who: str
) -> httpx.Response:
    """Follow a consent link as ``who``: the inbox, the provider, and back to the inbox."""
    oauth.account = who
    async with inbox_visitor(client, dep.connections) as visitor:
        await visitor.login(who)
        link = urlsplit(url)
        start = await visitor.get(f"{link.path}?{link.query}")
        assert start.status_code == 303, start.text
        async with httpx.AsyncClient() as browser:
            authorized = await browser.get(start.headers["location"])
        assert authorized.status_code == 302, authorized.text
        back = urlsplit(authorized.headers["location"])
        return await visitor.get(f"{back.path}?{back.query}")


async def test_a_call_waits_for_consent_then_acts_with_the_principals_token(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    config = deployment(tmp_path, task_queue, oauth)
    async with running(client, config) as dep:
        handle = await start_call(client, task_queue, "list_calendar_events", WEEK, principal=ALICE)
        state = await wait_for(handle, lambda s: s.phase is Phase.AWAITING_CONNECTION)
        pending = state.pending_connection
        assert pending is not None
        assert (pending.provider, pending.principal) == ("google", "alice")
        assert pending.url.startswith("http://127.0.0.1:8234/connections/start?ticket=")
        assert pending.expires_at is not None
        assert dep.google.authorizations == []  # nothing is sent before the consent
        page = await consent_as(client, dep, oauth, pending.url, "alice")
        assert page.status_code == 200, page.text
        assert "alice's google account is connected" in html.unescape(page.text)
        result = await asyncio.wait_for(handle.result(), 30)
        history = await history_text(handle)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output["items"][0]["summary"] == "alice's standup"
    assert dep.google.authorizations == ["Bearer at-alice-1"]
    kinds = [event.kind.value for event in result.events]
    assert "connection_requested" in kinds
    assert "connected" in kinds
    [grant] = oauth.grants
    assert grant["grant_type"] == "authorization_code"
    assert grant["redirect_uri"] == "http://127.0.0.1:8234/connections/callback"
    assert "/connections/start?ticket=" in history  # the payloads are searched, decoded
    for secret in oauth.issued:
        assert secret not in history
        assert secret not in result.model_dump_json()
        assert secret not in caplog.text
    stored = dep.connections.store.path.read_bytes()
    assert b"at-alice" not in stored
    assert b"rt-alice" not in stored


async def test_an_expired_token_is_refreshed_and_stored(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    config = deployment(tmp_path, task_queue, oauth)
    access, refresh = oauth.tokens_for("alice")
    expired = Tokens(access, refresh, datetime.now(UTC) - timedelta(minutes=5), ("calendar",))
    async with running(client, config) as dep:
        dep.connections.store.put("google", "alice", expired)
        handle = await start_call(client, task_queue, "list_calendar_events", WEEK, principal=ALICE)
        result = await asyncio.wait_for(handle.result(), 30)
        history = await history_text(handle)
        stored = dep.connections.store.get("google", "alice")
    assert result.status is CallStatus.COMPLETED, result.error
    [grant] = oauth.grants
    assert grant["grant_type"] == "refresh_token"
    assert grant["refresh_token"] == refresh
    assert dep.google.authorizations == ["Bearer at-alice-2"]  # the new one, not the expired
    assert stored is not None
    assert stored.access_token == "at-alice-2"
    assert stored.refresh_token == refresh
    assert stored.expires_at is not None
    assert stored.expires_at > datetime.now(UTC)
    assert "list_calendar_events" in history
    for secret in oauth.issued:
        assert secret not in history
        assert secret not in caplog.text


async def test_two_principals_calls_never_cross_accounts(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, task_queue, oauth)
    async with running(client, config) as dep:
        for who in ("alice", "bob"):
            access, refresh = oauth.tokens_for(who)
            dep.connections.store.put("google", who, Tokens(access, refresh, None, ()))
        handles = [
            await start_call(client, task_queue, "list_calendar_events", WEEK, principal=who)
            for who in (ALICE, BOB, ALICE, BOB, BOB, ALICE)
        ]
        results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 60)
    for result in results:
        assert result.status is CallStatus.COMPLETED, result.error
        assert result.output["items"][0]["summary"] == f"{result.principal}'s standup"
    assert sorted(dep.google.authorizations) == ["Bearer at-alice-1"] * 3 + ["Bearer at-bob-2"] * 3


async def test_a_revoked_connection_asks_for_consent_again(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, task_queue, oauth)
    async with running(client, config) as dep:
        access, refresh = oauth.tokens_for("alice")
        dep.connections.store.put("google", "alice", Tokens(access, refresh, None, ()))
        first = await start_call(client, task_queue, "list_calendar_events", WEEK, principal=ALICE)
        assert (await asyncio.wait_for(first.result(), 30)).status is CallStatus.COMPLETED
        assert dep.connections.store.revoke("google", "alice")
        second = await start_call(client, task_queue, "list_calendar_events", WEEK, principal=ALICE)
        state = await wait_for(second, lambda s: s.phase is Phase.AWAITING_CONNECTION)
        assert state.pending_connection is not None
        await second.terminate("test over")
    assert dep.google.authorizations == [f"Bearer {access}"]


async def test_without_consent_in_time_the_call_is_denied_and_nothing_ran(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, task_queue, oauth, consent_timeout_seconds=1)
    async with running(client, config) as dep:
        handle = await start_call(
            client,
            task_queue,
            "create_calendar_event",
            {
                "title": "Lunch",
                "start": "2026-01-07T12:00:00+01:00",
                "end": "2026-01-07T13:00:00+01:00",
            },
            principal=ALICE,
        )
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.CONNECTION_REQUIRED
    assert result.error.message == (
        "create_calendar_event: alice did not connect a google account in time; nothing ran"
    )
    assert result.error.retryable
    assert dep.google.authorizations == []
    assert "connection_timed_out" in [event.kind.value for event in result.events]


async def test_a_call_without_a_principal_is_refused_at_plan(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, task_queue, oauth)
    async with running(client, config) as dep:
        handle = await start_call(client, task_queue, "list_calendar_events", WEEK)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.CONNECTION_REQUIRED
    assert result.error.message == (
        "list_calendar_events: acts with each principal's own google account: the call names "
        "no principal"
    )
    assert dep.google.authorizations == []


async def test_the_consent_page_serves_only_the_principal_signed_in(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, task_queue, oauth)
    async with running(client, config) as dep:
        handle = await start_call(client, task_queue, "list_calendar_events", WEEK, principal=ALICE)
        state = await wait_for(handle, lambda s: s.phase is Phase.AWAITING_CONNECTION)
        assert state.pending_connection is not None
        link = urlsplit(state.pending_connection.url)
        async with inbox_visitor(client, dep.connections) as visitor:
            anonymous = await visitor.get(f"{link.path}?{link.query}")
            await visitor.login("bob")
            refused = await visitor.get(f"{link.path}?{link.query}")
            page = await visitor.get(f"/calls/{handle.id}")
        shown = view_text(await ToolCallClient(client).status(handle.id))
        await handle.terminate("test over")
    assert anonymous.status_code == 401
    assert refused.status_code == 403
    assert "connects alice's account; you are signed in as bob" in html.unescape(refused.text)
    assert oauth.codes == {}
    url = state.pending_connection.url
    assert "Waiting for alice to connect a google account" in page.text
    assert f'href="{html.escape(url)}"' in page.text
    assert "waits for alice to connect a google account (until 20" in shown
    assert f"  {url}" in shown.splitlines()


async def test_a_creation_is_approved_and_made_on_the_principals_calendar(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, task_queue, oauth)
    lunch = {
        "title": "Lunch",
        "start": "2026-01-07T12:00:00+01:00",
        "end": "2026-01-07T13:00:00+01:00",
    }
    async with running(client, config) as dep:
        access, refresh = oauth.tokens_for("alice")
        dep.connections.store.put("google", "alice", Tokens(access, refresh, None, ()))
        handle = await start_call(
            client, task_queue, "create_calendar_event", lunch, principal=ALICE
        )
        pending = await pending_approval(handle)
        assert dep.google.authorizations == []  # the preview reads the token, sends nothing
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await asyncio.wait_for(handle.result(), 30)
        history = await history_text(handle)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output["event"]["summary"] == "Lunch"
    assert dep.google.authorizations == [f"Bearer {access}"]
    assert access not in pending.model_dump_json()
    assert access not in history


async def test_one_consent_lets_every_call_waiting_for_it_go_on(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, task_queue, oauth)
    async with running(client, config) as dep:
        handles = [
            await start_call(client, task_queue, "list_calendar_events", WEEK, principal=ALICE)
            for _ in range(2)
        ]
        states = [
            await wait_for(h, lambda s: s.phase is Phase.AWAITING_CONNECTION) for h in handles
        ]
        ids = {h.id for h in handles}
        query = (
            f'WorkflowId IN ("{handles[0].id}", "{handles[1].id}") '
            'AND ToolCallStatus = "awaiting_connection"'
        )
        for _ in range(100):  # visibility lists the second call a moment after it waits
            listed = {e.id async for e in client.list_workflows(query)}
            if listed == ids:
                break
            await asyncio.sleep(0.1)
        assert states[0].pending_connection is not None
        page = await consent_as(client, dep, oauth, states[0].pending_connection.url, "alice")
        assert page.status_code == 200, page.text
        results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 30)
    assert [r.status for r in results] == [CallStatus.COMPLETED] * 2
    assert dep.google.authorizations == ["Bearer at-alice-1"] * 2
