"""A deployment whose calendar acts with each principal's own Google account, for the
connection tests and the recorded histories.

Google Calendar is replayed at the HTTP transport under the production guard (``FakeGoogle``),
which answers each listing with one event named after the account its bearer token belongs to
(``at-<account>-<n>``, as ``tests.support.oauth_server`` issues them).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from temporalio.client import Client

from tests.support.calendars import GOOGLE_HOST, PUBLIC_ADDRESS, google_event, google_page
from tests.support.http_servers import MapResolver
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from toolcalls.activities.calendar import CalendarTools
from toolcalls.activities.connections import Connections
from toolcalls.activities.network.service import service_guard
from toolcalls.worker.config import Config
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.run import build_worker

TOOLS = [*ALL_TOOL_NAMES, "list_calendar_events", "create_calendar_event"]
WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
PUBLIC_URL = "http://127.0.0.1:8234"
_BEARER = re.compile(r"Bearer at-([a-z0-9]+)-\d+")


@dataclass
class FakeGoogle:
    """Google Calendar's ``events.list`` (one event, titled after the token's account) and
    ``events.insert`` (the event as sent, under its client-chosen id)."""

    authorizations: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        header = request.headers.get("authorization", "")
        with self._lock:
            self.authorizations.append(header)
        match = _BEARER.fullmatch(header)
        if match is None:
            return httpx.Response(401, json={"error": {"code": 401, "message": "bad token"}})
        if request.method == "POST":
            return httpx.Response(200, json={**json.loads(request.content), "status": "confirmed"})
        account = match.group(1)
        event = google_event(
            f"e{account}",
            f"{account}'s standup",
            "2026-01-05T09:00:00+01:00",
            "2026-01-05T09:15:00+01:00",
        )
        return google_page([event])


@dataclass
class Deployment:
    config: Config
    connections: Connections
    google: FakeGoogle


@asynccontextmanager
async def running(client: Client, config: Config) -> AsyncIterator[Deployment]:
    """A real worker for ``config``; its calendar's Google is ``FakeGoogle``."""
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


async def history_text(handle: Any) -> str:
    """A call's history as JSON, followed by every payload decoded (payloads are base64 in the
    JSON form, so a search of the JSON alone would not find a token in one)."""
    data = (await handle.fetch_history()).to_json_dict()
    decoded: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "data" and isinstance(value, str):
                    with contextlib.suppress(ValueError):
                        decoded.append(base64.b64decode(value).decode("utf-8", "replace"))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return "\n".join([json.dumps(data), *decoded])
