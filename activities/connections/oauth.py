"""The OAuth 2.0 parts of a connection: PKCE, the consent ticket and state, token requests.

- **Ticket** (the consent link's ``ticket``): provider, principal, workflow id, call id and an
  expiry, with an HMAC under the store's key. It names a call; it holds nothing secret.
- **State** (sent to the provider and back): the ticket's fields plus the PKCE verifier, sealed
  with AES-GCM under a key derived from the store's, so the verifier never leaves the inbox in
  the clear and a changed state cannot be opened.
- **Token requests**: the authorization code grant with ``code_verifier`` (RFC 7636, S256) and
  the refresh token grant, form-encoded, no redirects followed, no proxies from the environment.
  A failure is an ``OAuthError`` naming the endpoint, the HTTP status and the OAuth ``error``
  code, never a token or the response body.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from toolcalls.activities.connections.settings import ProviderSettings
from toolcalls.activities.connections.store import Tokens

TOKEN_TIMEOUT_SECONDS = 20.0
MAX_TOKEN_RESPONSE_BYTES = 64 * 1024
STATE_LIFETIME = timedelta(minutes=15)
"""From following the link to coming back from the provider."""
_TICKET = b"toolcalls connections: ticket"
_STATE = b"toolcalls connections: state"


class OAuthError(RuntimeError):
    """A token request failed; ``code`` is the OAuth error (``invalid_grant``) when given."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class BadTicket(ValueError):
    """A ticket or state that is not the deployment's, or has expired."""


def pkce_pair() -> tuple[str, str]:
    """A new ``(code_verifier, code_challenge)`` (S256)."""
    verifier = secrets.token_urlsafe(48)
    return verifier, challenge_of(verifier)


def challenge_of(verifier: str) -> str:
    return _b64(hashlib.sha256(verifier.encode("ascii")).digest())


@dataclass(frozen=True)
class Ticket:
    """Which call's principal connects which provider, until when."""

    provider: str
    principal: str
    workflow_id: str
    call_id: str
    expires: int
    """Unix seconds."""

    def fields(self) -> list[object]:
        return [self.provider, self.principal, self.workflow_id, self.call_id, self.expires]


class Sealer:
    """Signs tickets and seals states with keys derived from the store's (newest signs)."""

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        self._keys = [(key_id, key) for key_id, key in keys]

    def ticket(self, ticket: Ticket) -> str:
        key_id, key = self._keys[0]
        body = _b64(json.dumps([key_id, *ticket.fields()]).encode())
        return f"{body}.{_b64(_mac(key, body))}"

    def open_ticket(self, text: str, now: datetime | None = None) -> Ticket:
        body, _, mac = text.partition(".")
        try:
            key_id, *rest = json.loads(_unb64(body))
            key = dict(self._keys).get(key_id)
            ok = key is not None and hmac.compare_digest(_b64(_mac(key, body)), mac)
            ticket = Ticket(*rest) if ok else None
        except (ValueError, TypeError):
            ticket = None
        if ticket is None:
            raise BadTicket("this link is not one the deployment made")
        return _unexpired(ticket, now)

    def state(self, ticket: Ticket, verifier: str, now: datetime | None = None) -> str:
        """The sealed state of one visit to the provider: the ticket, the verifier, and an
        expiry ``STATE_LIFETIME`` away (never past the ticket's)."""
        key_id, key = self._keys[0]
        nonce = os.urandom(12)
        until = int(((now or datetime.now(UTC)) + STATE_LIFETIME).timestamp())
        expiring = dataclasses.replace(ticket, expires=min(ticket.expires, until))
        plain = json.dumps([*expiring.fields(), verifier]).encode()
        sealed = AESGCM(_derive(key, _STATE)).encrypt(nonce, plain, key_id.encode())
        return f"{key_id}.{_b64(nonce + sealed)}"

    def open_state(self, text: str, now: datetime | None = None) -> tuple[Ticket, str]:
        key_id, _, body = text.partition(".")
        key = dict(self._keys).get(key_id)
        try:
            if key is None:
                raise ValueError(key_id)
            raw = _unb64(body)
            plain = AESGCM(_derive(key, _STATE)).decrypt(raw[:12], raw[12:], key_id.encode())
            *fields, verifier = json.loads(plain)
            ticket = Ticket(*fields)
        except (ValueError, TypeError, InvalidTag):
            raise BadTicket("the state is not one this inbox sent") from None
        return _unexpired(ticket, now), verifier


def _unexpired(ticket: Ticket, now: datetime | None) -> Ticket:
    moment = now or datetime.now(UTC)
    if moment.timestamp() >= ticket.expires:
        raise BadTicket("this link has expired: call the tool again for a new one")
    return ticket


async def exchange_code(
    provider: ProviderSettings,
    secret: str | None,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Tokens:
    """The tokens an authorization code gives (with its PKCE verifier)."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": redirect_uri,
    }
    return await _token_request(provider, secret, form, None, transport)


async def refresh(
    provider: ProviderSettings,
    secret: str | None,
    refresh_token: str,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Tokens:
    """New tokens for a refresh token; the old refresh token stays when none is given back."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    return await _token_request(provider, secret, form, refresh_token, transport)


async def _token_request(
    provider: ProviderSettings,
    secret: str | None,
    form: dict[str, str],
    refresh_token: str | None,
    transport: httpx.AsyncBaseTransport | None,
) -> Tokens:
    endpoint = provider.token_endpoint
    form = {**form, "client_id": provider.client_id}
    if secret is not None:
        form["client_secret"] = secret
    async with httpx.AsyncClient(
        trust_env=False, follow_redirects=False, timeout=TOKEN_TIMEOUT_SECONDS, transport=transport
    ) as client:
        try:
            response = await client.post(
                endpoint, data=form, headers={"Accept": "application/json"}
            )
        except httpx.HTTPError as exc:
            raise OAuthError(f"{provider.name} token endpoint: {type(exc).__name__}") from None
    body = response.content[:MAX_TOKEN_RESPONSE_BYTES]
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    if response.status_code != 200:
        code = data.get("error") if isinstance(data.get("error"), str) else None
        raise OAuthError(
            f"{provider.name} token endpoint answered http {response.status_code}"
            + (f" ({code[:64]})" if code else ""),
            code,
        )
    access = data.get("access_token")
    if not isinstance(access, str) or not access:
        raise OAuthError(f"{provider.name} token endpoint answered no access_token")
    expires_in = data.get("expires_in")
    expires = (
        datetime.now(UTC) + timedelta(seconds=float(expires_in))
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool)
        else None
    )
    scope = data.get("scope")
    given = data.get("refresh_token")
    return Tokens(
        access_token=access,
        refresh_token=given if isinstance(given, str) and given else refresh_token,
        expires_at=expires,
        scopes=tuple(scope.split()) if isinstance(scope, str) else tuple(provider.scope_list),
    )


def _derive(key: bytes, label: bytes) -> bytes:
    return hmac.new(key, label, hashlib.sha256).digest()


def _mac(key: bytes, body: str) -> bytes:
    return hmac.new(_derive(key, _TICKET), body.encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
