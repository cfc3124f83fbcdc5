"""Gmail and Graph as ``httpx.MockTransport`` routes answering in their documented formats.

The backends run behind the production guard and service client; only the transport (and the
resolver, so no lookup leaves the machine) is replaced.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.http_servers import MapResolver
from toolcalls.activities.email.gmail import Gmail
from toolcalls.activities.email.outlook import OutlookEmail
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.email.tools import EmailTools
from toolcalls.activities.network.service import service_guard

TOKEN = "ya29.mail-token-5e8d"
TOKEN_ENV = "TEST_MAIL_TOKEN"
REMOTE_TEXT = "internal: mailbox 7731 of user alice@example.com"
Handler = Callable[[httpx.Request], httpx.Response]


@dataclass
class Routes:
    """Answers by ``(method, path)``; every request is kept."""

    answers: dict[tuple[str, str], Handler] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.get((request.method, request.url.path))
        if answer is None:
            return httpx.Response(404, json={"error": {"message": REMOTE_TEXT}})
        return answer(request)

    def on(
        self, method: str, path: str, answer: Handler | dict[str, Any], status: int = 200
    ) -> None:
        if callable(answer):
            self.answers[(method, path)] = answer
        else:
            body = answer
            self.answers[(method, path)] = lambda _: httpx.Response(status, json=body)

    def paths(self) -> list[str]:
        return [f"{r.method} {r.url.path}" for r in self.requests]


def backend_tools(kind: str, routes: Routes, **changes: Any) -> EmailTools:
    settings = service_settings(kind, **changes)
    return EmailTools(settings, backend_for(kind, routes, **changes))


def service_settings(kind: str, **changes: Any) -> EmailSettings:
    values: dict[str, Any] = {"backend": kind, "token_env": TOKEN_ENV, "timeout_seconds": 10}
    values.update(changes)
    return EmailSettings.model_validate(values)


def backend_for(kind: str, routes: Routes, **changes: Any) -> Gmail | OutlookEmail:
    """The ``kind`` backend (``gmail`` or ``outlook``) whose requests ``routes`` answers."""
    guard = service_guard(
        resolver=MapResolver(
            {"gmail.googleapis.com": ["203.0.113.10"], "graph.microsoft.com": ["203.0.113.20"]}
        ),
        transport=httpx.MockTransport(routes),
    )
    environ = {TOKEN_ENV: TOKEN}
    settings = service_settings(kind, **changes)
    return (Gmail if kind == "gmail" else OutlookEmail)(settings, environ, guard=guard)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def body_json(request: httpx.Request) -> Any:
    return json.loads(request.content)


def gmail_part(
    mime_type: str,
    data: bytes | None = None,
    *,
    charset: str | None = None,
    filename: str = "",
    parts: list[dict[str, Any]] | None = None,
    attachment_id: str | None = None,
) -> dict[str, Any]:
    """One part of a ``format=full`` payload."""
    content_type = mime_type + (f"; charset={charset}" if charset else "")
    headers = [{"name": "Content-Type", "value": content_type}]
    body: dict[str, Any] = {"size": len(data or b"")}
    if data is not None and attachment_id is None:
        body["data"] = b64url(data)
    if attachment_id is not None:
        body["attachmentId"] = attachment_id
        headers.append(
            {"name": "Content-Disposition", "value": f'attachment; filename="{filename}"'}
        )
    part: dict[str, Any] = {
        "mimeType": mime_type,
        "filename": filename,
        "headers": headers,
        "body": body,
    }
    if parts is not None:
        part["parts"] = parts
    return part
