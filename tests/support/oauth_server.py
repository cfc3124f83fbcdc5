"""An OAuth 2.0 authorization server on loopback, for the connection tests.

The documented endpoints a deployment's client uses, and nothing more:

- ``GET /authorize`` (RFC 6749 4.1.1, RFC 7636 4.3): checks ``response_type=code``, the client
  id, the redirect URI and an S256 ``code_challenge``; the person "consents" as
  ``server.account`` (the test chooses who is at the keyboard) and is redirected back to the
  redirect URI with ``code`` and the unchanged ``state``;
- ``POST /token`` (RFC 6749 4.1.3 and 6, RFC 7636 4.5): ``authorization_code`` with the client
  secret, the same redirect URI and a ``code_verifier`` whose S256 is the challenge (a code is
  used once); ``refresh_token`` for a refresh token it issued and did not revoke. Errors are
  400 with ``{"error": "invalid_grant" | "invalid_client" | ...}``.

Access tokens are ``at-<account>-<n>``, refresh tokens ``rt-<account>-<n>``: a test can tell
whose account a request acted on from its bearer token alone.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

CLIENT_ID = "toolcalls-test-client"
CLIENT_SECRET = "s3cr3t-oauth-client-secret"


@dataclass
class OAuthServer:
    redirect_uri: str
    account: str = "alice"
    expires_in: int = 3600
    port: int = 0
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    refresh_tokens: dict[str, str] = field(default_factory=dict)
    """Refresh token -> account, while not revoked."""
    grants: list[dict[str, str]] = field(default_factory=list)
    """Every token request's form (secrets included: the test's own)."""
    issued: list[str] = field(default_factory=list)
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def tokens_for(self, account: str) -> tuple[str, str]:
        """A new access and refresh token for ``account``, as if it had consented."""
        with self._lock:
            self._count += 1
            access, refresh = f"at-{account}-{self._count}", f"rt-{account}-{self._count}"
            self.refresh_tokens[refresh] = account
            self.issued += [access, refresh]
        return access, refresh

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        if query.get("response_type") != "code" or query.get("client_id") != CLIENT_ID:
            return 400, {}, {"error": "unauthorized_client"}
        if query.get("redirect_uri") != self.redirect_uri:
            return 400, {}, {"error": "invalid_request", "error_description": "redirect_uri"}
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return 400, {}, {"error": "invalid_request", "error_description": "pkce required"}
        code = secrets.token_urlsafe(16)
        with self._lock:
            self.codes[code] = {
                "challenge": query["code_challenge"],
                "redirect_uri": query["redirect_uri"],
                "account": self.account,
                "scope": query.get("scope", ""),
            }
        location = f"{self.redirect_uri}?{urlencode({'code': code, 'state': query['state']})}"
        return 302, {"Location": location}, None

    def token(self, form: dict[str, str]) -> tuple[int, Any]:
        self.grants.append(form)
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return 401, {"error": "invalid_client"}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with self._lock:
                issued = self.codes.pop(form.get("code", ""), None)
            if issued is None or form.get("redirect_uri") != issued["redirect_uri"]:
                return 400, {"error": "invalid_grant"}
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            if base64.urlsafe_b64encode(digest).decode().rstrip("=") != issued["challenge"]:
                return 400, {"error": "invalid_grant", "error_description": "code_verifier"}
            access, refresh = self.tokens_for(issued["account"])
            return 200, self._answer(access, refresh, issued["scope"])
        if grant == "refresh_token":
            account = self.refresh_tokens.get(form.get("refresh_token", ""))
            if account is None:
                return 400, {"error": "invalid_grant"}
            access, _ = self.tokens_for(account)
            return 200, self._answer(access, None, "")
        return 400, {"error": "unsupported_grant_type"}

    def _answer(self, access: str, refresh: str | None, scope: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
        }
        if refresh is not None:
            body["refresh_token"] = refresh
        if scope:
            body["scope"] = scope
        return body


def _handler(server: OAuthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != "/authorize":
                self._send(404, {"error": "not_found"})
                return
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            status, headers, body = server.authorize(query)
            self._send(status, body, headers)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode()
            if urlsplit(self.path).path != "/token":
                self._send(404, {"error": "not_found"})
                return
            form = {k: v[0] for k, v in parse_qs(raw).items()}
            status, body = server.token(form)
            self._send(status, body)

    return Handler


@contextmanager
def oauth_server(redirect_uri: str) -> Iterator[OAuthServer]:
    server = OAuthServer(redirect_uri=redirect_uri)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    server.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
