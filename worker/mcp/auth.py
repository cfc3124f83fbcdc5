"""The bearer token every streamable HTTP request to ``toolcalls mcp`` must carry.

An ASGI middleware in front of the MCP application: a request without ``Authorization: Bearer
<token>`` gets 401, one with another token 403, and neither reaches the MCP session manager (no
session is created, nothing is started). The comparison takes the same time wherever the tokens
differ. The token comes from the environment variable ``[mcp] token_env``; the identity bound to
it is ``[mcp] user``.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from toolcalls.worker.config import ConfigError
from toolcalls.worker.payloads.server import MIN_TOKEN_CHARS

log = logging.getLogger("toolcalls.mcp")


def token_from(environ: Mapping[str, str], variable: str) -> str:
    """The bearer token in ``variable``.

    Raises:
        ConfigError: the variable is unset or holds a token too short to be one.
    """
    token = environ.get(variable, "").strip()
    if not token:
        raise ConfigError(
            f"mcp.token_env: toolcalls mcp --http needs a bearer token in the variable {variable}"
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"mcp.token_env: the token in {variable} has fewer than {MIN_TOKEN_CHARS} characters"
        )
    return token


class BearerToken:
    """Refuse every HTTP request that does not carry the token (see the module docstring)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: start and stop the session manager
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        scheme, _, presented = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            await _refuse(send, 401, "missing bearer token")
            return
        if not hmac.compare_digest(presented.strip().encode("latin-1"), self.token):
            log.info("refused %s %s: token not accepted", scope.get("method"), scope.get("path"))
            await _refuse(send, 403, "token not accepted")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = json.dumps({"error": reason}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="toolcalls"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
