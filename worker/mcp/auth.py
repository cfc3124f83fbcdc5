"""The bearer token every streamable HTTP request to ``toolcalls mcp`` must carry.

An ASGI middleware in front of the MCP application: a request without ``Authorization: Bearer
<token>`` gets 401, one with another token 403, and neither reaches the MCP session manager (no
session is created, nothing is started). The comparison takes the same time wherever the tokens
differ. The token comes from the environment variable ``[mcp] token_env``; the identity bound to
it is ``[mcp] user``.

With ``[mcp.oauth]`` the server is also an OAuth 2.1 protected resource: it serves its metadata
(RFC 9728) at ``/.well-known/oauth-protected-resource`` (and that path followed by the resource's
path), and a token that is not the static one is checked as an access token
(``toolcalls.worker.mcp.oauth``). A missing or refused token gets 401 with ``WWW-Authenticate:
Bearer resource_metadata="..."`` (and ``error="invalid_token"`` when one was presented); a valid
token whose scopes do not reach the served profile gets 403 ``error="insufficient_scope"`` naming
the scopes that would. An accepted token's principal and profile go to the MCP application in
the ASGI scope (``oauth.PRINCIPAL_KEY``, ``oauth.PROFILE_KEY``), and the token no further. A
streamable HTTP session is bound to the principal (or the static token) that opened it: a request
with another's token and that session's id gets 403.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolcalls.worker.config import ConfigError
from toolcalls.worker.mcp.oauth import (
    PRINCIPAL_KEY,
    PROFILE_KEY,
    WELL_KNOWN,
    TokenRefused,
    Verifier,
    metadata_url,
    resource_metadata,
)
from toolcalls.worker.mcp.oauth_settings import OAuthSection, unlocked_profile
from toolcalls.worker.payloads.server import MIN_TOKEN_CHARS

SESSION_HEADER = b"mcp-session-id"
STATIC_OWNER = ""
MAX_OWNED_SESSIONS = 100_000
"""Sessions remembered with their owner; the oldest is forgotten first (the SDK keeps far fewer
open)."""

log = logging.getLogger("toolcalls.mcp")


def token_from(environ: Mapping[str, str], variable: str, optional: bool = False) -> str | None:
    """The bearer token in ``variable``; ``None`` when it is unset and ``optional`` (OAuth
    access tokens are accepted).

    Raises:
        ConfigError: the variable is unset (and the token not optional) or holds a token too
            short to be one.
    """
    token = environ.get(variable, "").strip()
    if not token and optional:
        return None
    if not token:
        raise ConfigError(
            f"mcp.token_env: toolcalls mcp --http needs a bearer token in the variable {variable}"
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"mcp.token_env: the token in {variable} has fewer than {MIN_TOKEN_CHARS} characters"
        )
    return token


@dataclass(frozen=True)
class Gate:
    """What an HTTP request must carry: the static ``token``, or an access token of ``oauth``
    reaching the ``served`` profile (``None``: every enabled tool)."""

    token: str | None
    oauth: OAuthSection | None
    served: str | None
    path: str

    @asynccontextmanager
    async def protect(self, app: ASGIApp) -> AsyncIterator[BearerToken]:
        """``app`` behind the gate, its key sets read (and closed after).

        Raises:
            ConfigError: a JWKS file cannot be read or holds no usable key.
        """
        if self.oauth is None:
            yield BearerToken(app, self.token, path=self.path)
            return
        verifier = Verifier(self.oauth)
        try:
            await verifier.start()
            yield BearerToken(app, self.token, verifier, self.served, self.path)
        finally:
            await verifier.aclose()


class BearerToken:
    """Refuse every HTTP request that does not carry the token, or with ``oauth`` an accepted
    access token (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        oauth: Verifier | None = None,
        served: str | None = None,
        path: str = "/mcp",
    ) -> None:
        self.app = app
        self.token = token.encode() if token is not None else None
        self.oauth = oauth
        self.served = served
        """The profile the server serves (``None``: every enabled tool)."""
        self.metadata: bytes | None = None
        self.metadata_paths: frozenset[str] = frozenset()
        self.challenge = 'Bearer realm="toolcalls"'
        self.owners: OrderedDict[bytes, str] = OrderedDict()
        """With OAuth: who opened each streamable HTTP session (``STATIC_OWNER``: the static
        token), so another token cannot use a session id it learnt."""
        if oauth is not None:
            resource = oauth.settings.resource
            self.metadata = json.dumps(resource_metadata(oauth.settings)).encode()
            own = metadata_url(resource).split(WELL_KNOWN, 1)[1]
            self.metadata_paths = frozenset({WELL_KNOWN, WELL_KNOWN + path, WELL_KNOWN + own})
            self.challenge = f'Bearer resource_metadata="{metadata_url(resource)}"'

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: start and stop the session manager
            await self.app(scope, receive, send)
            return
        if self.metadata is not None and scope.get("path") in self.metadata_paths:
            await _respond(send, 200, self.metadata, [(b"cache-control", b"max-age=3600")])
            return
        headers = dict(scope.get("headers") or [])
        scheme, _, presented = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        presented = presented.strip()
        if scheme.lower() != "bearer" or not presented:
            await _refuse(send, 401, {"error": "missing bearer token"}, self.challenge)
            return
        if self.token is not None and hmac.compare_digest(presented.encode("latin-1"), self.token):
            await self._pass(scope, receive, send, STATIC_OWNER)
            return
        if self.oauth is None:
            log.info("refused %s %s: token not accepted", scope.get("method"), scope.get("path"))
            await _refuse(send, 403, {"error": "token not accepted"}, self.challenge)
            return
        await self._authorize(scope, receive, send, presented, self.oauth)

    async def _authorize(
        self, scope: Scope, receive: Receive, send: Send, presented: str, oauth: Verifier
    ) -> None:
        try:
            grant = await oauth.verify(presented)
        except TokenRefused as exc:
            reason = _quotable(str(exc))
            log.info("refused %s %s: %s", scope.get("method"), scope.get("path"), reason)
            challenge = f'{self.challenge}, error="invalid_token", error_description="{reason}"'
            await _refuse(
                send, 401, {"error": "invalid_token", "error_description": reason}, challenge
            )
            return
        reaches, profile = unlocked_profile(oauth.settings, grant.scopes, self.served)
        if not reaches:
            needed = " ".join(oauth.settings.scopes_for(self.served) or oauth.settings.scopes)
            reason = f"the token's scopes do not reach the {self.served or 'server'}'s tools"
            log.info("refused %s: %s (%s)", grant.principal, reason, needed)
            challenge = (
                f'{self.challenge}, error="insufficient_scope", scope="{needed}", '
                f'error_description="{reason}"'
            )
            body = {"error": "insufficient_scope", "error_description": reason, "scope": needed}
            await _refuse(send, 403, body, challenge)
            return
        scope = {**scope, PRINCIPAL_KEY: grant.principal, PROFILE_KEY: profile}
        await self._pass(scope, receive, send, grant.principal)

    async def _pass(self, scope: Scope, receive: Receive, send: Send, owner: str) -> None:
        """On to the MCP application; with OAuth, only into a session ``owner`` opened."""
        if self.oauth is None:
            await self.app(scope, receive, send)
            return
        session = dict(scope.get("headers") or []).get(SESSION_HEADER)
        opened = self.owners.get(session) if session is not None else None
        if opened is not None and opened != owner:
            log.info("refused %s: a session another client opened", owner or "the static token")
            body = {"error": "the session belongs to another client"}
            await _refuse(send, 403, body, self.challenge)
            return

        async def recording(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == SESSION_HEADER and value not in self.owners:
                        self.owners[value] = owner
                        while len(self.owners) > MAX_OWNED_SESSIONS:
                            self.owners.popitem(last=False)
            await send(message)

        await self.app(scope, receive, recording)


def _quotable(text: str) -> str:
    """``text`` fit for a quoted string of a header (no quote, backslash or control)."""
    return (
        "".join(" " if ord(c) < 0x20 or ord(c) > 0x7E else c for c in text)
        .replace('"', "'")
        .replace("\\", "/")
    )


async def _refuse(send: Send, status: int, body: dict[str, str], challenge: str) -> None:
    await _respond(
        send,
        status,
        json.dumps(body).encode(),
        [(b"www-authenticate", challenge.encode("latin-1"))],
    )


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
