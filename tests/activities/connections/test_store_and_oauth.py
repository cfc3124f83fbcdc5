"""The connection store, the consent ticket and state, PKCE, refresh and the CLI, without a
Temporal server (the OAuth server is the real loopback one)."""

from __future__ import annotations

import argparse
import json
import secrets
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from temporalio.exceptions import ApplicationError

from tests.activities.connections.conftest import deployment
from tests.support.oauth_server import CLIENT_SECRET, OAuthServer
from toolcalls.activities.connections import (
    BadTicket,
    ConnectionStore,
    NotConnected,
    OAuthError,
    Sealer,
    Ticket,
    Tokens,
    acting_principal,
)
from toolcalls.activities.connections.oauth import exchange_code, pkce_pair
from toolcalls.worker.config import ConfigError, config_problems, parse_config
from toolcalls.worker.connections import cli
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.exits import EXIT_FAILED, CommandError
from toolcalls.worker.mcp.follow import progress_text
from toolcalls.workflows.models.call import CallState, Phase
from toolcalls.workflows.models.connection import ConsentRequest
from toolcalls.workflows.reach.client import CallView

KEYS = [("k2", secrets.token_bytes(32)), ("k1", secrets.token_bytes(32))]
TICKET = Ticket("google", "alice", "call-1", "call-1", int(datetime.now(UTC).timestamp()) + 600)


def test_tokens_are_sealed_at_rest_and_bound_to_their_row(tmp_path: Path) -> None:
    store = ConnectionStore(tmp_path / "c.sqlite3", KEYS)
    store.put("google", "alice", Tokens("at-alice-secret", "rt-alice-secret", None, ("a",)))
    store.put("google", "bob", Tokens("at-bob-secret", None, None, ()))
    raw = (tmp_path / "c.sqlite3").read_bytes()
    assert b"alice-secret" not in raw
    assert (tmp_path / "c.sqlite3").stat().st_mode & 0o777 == 0o600
    assert repr(store.get("google", "alice")).count("secret") == 0
    # A row moved under another principal does not open: its associated data names alice.
    db = sqlite3.connect(tmp_path / "c.sqlite3")
    db.execute("delete from connections where principal = 'bob'")
    db.execute("update connections set principal = 'bob' where principal = 'alice'")
    db.commit()
    with pytest.raises(Exception, match="google connection of bob: cannot be opened"):
        store.get("google", "bob")
    [row] = store.list()
    assert (row.provider, row.principal, row.refreshable) == ("google", "bob", False)


def test_an_older_key_still_opens_rows_it_sealed(tmp_path: Path) -> None:
    old = ConnectionStore(tmp_path / "c.sqlite3", KEYS[1:])
    old.put("microsoft", "alice", Tokens("at", "rt", None, ()))
    rotated = ConnectionStore(tmp_path / "c.sqlite3", KEYS)
    assert rotated.get("microsoft", "alice") == Tokens("at", "rt", None, ())


def test_a_changed_ticket_or_state_is_refused() -> None:
    sealer = Sealer(KEYS)
    ticket = sealer.ticket(TICKET)
    assert sealer.open_ticket(ticket) == TICKET
    body, _, mac = ticket.partition(".")
    forged = Sealer([("k2", secrets.token_bytes(32))]).ticket(
        Ticket("google", "bob", "call-1", "call-1", TICKET.expires)
    )
    for bad in (f"{body}x.{mac}", f"{body}.{mac[:-2]}", forged, ""):
        with pytest.raises(BadTicket, match="not one the deployment made"):
            sealer.open_ticket(bad)
    state = sealer.state(TICKET, "verifier")
    assert sealer.open_state(state) == (TICKET, "verifier")
    flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
    with pytest.raises(BadTicket, match="not one this inbox sent"):
        sealer.open_state(flipped)
    late = datetime.fromtimestamp(TICKET.expires, UTC)
    with pytest.raises(BadTicket, match="expired"):
        sealer.open_ticket(ticket, now=late)


async def test_the_token_endpoint_checks_the_pkce_verifier(
    tmp_path: Path, oauth: OAuthServer
) -> None:
    config = deployment(tmp_path, "tq", oauth)
    provider = config.connections.providers[0]
    verifier, challenge = pkce_pair()
    query = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": oauth.redirect_uri,
        "state": "s",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    _, headers, _ = oauth.authorize(query)
    code = headers["Location"].split("code=")[1].split("&")[0]
    with pytest.raises(
        OAuthError, match=r"google token endpoint answered http 400 \(invalid_grant\)"
    ):
        await exchange_code(
            provider,
            CLIENT_SECRET,
            code=code,
            verifier=pkce_pair()[0],
            redirect_uri=oauth.redirect_uri,
        )
    _, headers, _ = oauth.authorize(query)
    code = headers["Location"].split("code=")[1].split("&")[0]
    tokens = await exchange_code(
        provider, CLIENT_SECRET, code=code, verifier=verifier, redirect_uri=oauth.redirect_uri
    )
    assert tokens.access_token.startswith("at-alice-")
    assert tokens.refresh_token is not None


async def test_a_refresh_the_provider_refuses_removes_the_connection(
    tmp_path: Path, oauth: OAuthServer
) -> None:
    import os

    config = deployment(tmp_path, "tq", oauth)
    connections = deployment_connections(config, os.environ)
    assert connections is not None
    past = datetime.now(UTC) - timedelta(minutes=1)
    connections.store.put("google", "alice", Tokens("at-x", "rt-revoked-at-google", past, ()))
    with pytest.raises(NotConnected, match="alice's google connection was revoked at the provider"):
        await connections.access_token("google", "alice")
    assert connections.store.get("google", "alice") is None
    with pytest.raises(NotConnected, match="alice has not connected a google account"):
        await connections.access_token("google", "alice")


def test_the_cli_lists_without_tokens_and_revokes(
    tmp_path: Path, oauth: OAuthServer, capsys: Any
) -> None:
    import os

    config = deployment(tmp_path, "tq", oauth)
    connections = deployment_connections(config, os.environ)
    assert connections is not None
    expires = datetime(2030, 1, 1, tzinfo=UTC)
    connections.store.put("google", "alice", Tokens("at-hidden", "rt-hidden", expires, ("cal",)))
    listing = argparse.Namespace(connections_command="list", json=True)
    assert cli.run(config, listing, os.environ) == 0
    out = capsys.readouterr().out
    assert "hidden" not in out
    assert json.loads(out)["connections"] == [
        {
            "provider": "google",
            "principal": "alice",
            "scopes": ["cal"],
            "expires_at": "2030-01-01T00:00:00+00:00",
            "updated_at": json.loads(out)["connections"][0]["updated_at"],
            "refreshable": True,
        }
    ]
    revoke = argparse.Namespace(
        connections_command="revoke", json=False, provider="google", principal="alice"
    )
    assert cli.run(config, revoke, os.environ) == 0
    assert capsys.readouterr().out == "revoked alice's google connection\n"
    with pytest.raises(CommandError, match="alice has no google connection") as again:
        cli.run(config, revoke, os.environ)
    assert again.value.code == EXIT_FAILED


def test_the_configuration_names_what_a_connection_lacks() -> None:
    base: dict[str, Any] = {"tools": ["list_calendar_events"]}
    google = parse_config({**base, "calendar": {"backend": "google", "connection": "google"}}, "t")
    assert config_problems(google) == [
        "calendar.connection: no [[connections.providers]] named google"
    ]
    outlook = parse_config(
        {**base, "calendar": {"backend": "outlook", "connection": "google"}}, "t"
    )
    assert config_problems(outlook) == [
        "calendar.connection: the outlook backend connects through microsoft"
    ]
    with pytest.raises(ConfigError, match="public_url: the providers need the inbox's public url"):
        parse_config(
            {**base, "connections": {"providers": [{"name": "google", "client_id": "c"}]}}, "t"
        )


def test_the_mcp_front_shows_the_consent_link_while_a_call_waits() -> None:
    consent = ConsentRequest(provider="google", principal="alice", url="https://i.test/c?t=1")
    state = CallState(
        workflow_id="w",
        call_id="w",
        tool="list_calendar_events",
        phase=Phase.AWAITING_CONNECTION,
        capabilities=[],
        pending_approval=None,
        pending_question=None,
        events=[],
        result=None,
        pending_connection=consent,
    )
    view = CallView(state, live=True, running=True, history_events=[])
    text = progress_text(cast(Any, None), view)
    assert text == "waiting for alice to connect a google account: https://i.test/c?t=1"


async def test_a_request_acts_only_for_the_principal_the_call_runs_for(
    tmp_path: Path, oauth: OAuthServer
) -> None:
    import os

    config = deployment(tmp_path, "tq", oauth)
    connections = deployment_connections(config, os.environ)
    assert connections is not None
    connections.store.put("google", "alice", Tokens("at-alice-9", None, None, ()))
    headers = connections.bearer("google", "list_calendar_events")
    with pytest.raises(ApplicationError) as nobody:
        await headers()
    assert nobody.value.type == "connection_required"
    marker = acting_principal.set("alice")
    try:
        assert await headers() == {"Authorization": "Bearer at-alice-9"}
    finally:
        acting_principal.reset(marker)
    marker = acting_principal.set("bob")
    try:
        with pytest.raises(ApplicationError) as bob:
            await headers()
    finally:
        acting_principal.reset(marker)
    assert bob.value.type == "connection_required"
    assert bob.value.message == (
        "list_calendar_events: bob has not connected a google account; call again to be asked "
        "to connect; nothing was sent"
    )


def test_a_state_expires_soon_after_the_link_was_followed() -> None:
    sealer = Sealer(KEYS)
    now = datetime.now(UTC)
    state = sealer.state(TICKET, "verifier", now=now - timedelta(minutes=16))
    with pytest.raises(BadTicket, match="expired"):
        sealer.open_state(state, now=now)
