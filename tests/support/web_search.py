"""Recorded search providers replayed through the real network guard.

``Providers`` is an ``httpx.MockTransport`` handler: it answers each provider host with a recorded
response (or one a test sets) and keeps every request it was sent, so tests can assert the URL,
query parameters and headers that left the worker. The guard in front of it is the production one,
with a resolver that maps the providers' names to a public address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from temporalio.testing import ActivityEnvironment

from tests.support.processes import activity_env
from toolcalls.activities.base import CallContext
from toolcalls.activities.network.guard import Address, NetworkGuard
from toolcalls.activities.network.search import WebSearchArgs, WebSearchResult, WebSearchTools
from toolcalls.activities.network.settings import WebSearchSettings

FIXTURES = Path(__file__).parent.parent / "fixtures" / "web_search"
BRAVE_HOST = "api.search.brave.com"
DDG_HOST = "html.duckduckgo.com"
WIKIPEDIA_HOST = "en.wikipedia.org"
PUBLIC_ADDRESS = ipaddress.ip_address("93.184.216.34")
KEY = "BSAk3y-0123456789abcdef"
CALL = CallContext(
    workflow_id="wf", call_id="call", idempotency_key="wf:call", approval=None, precondition=None
)


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


RECORDED = {
    BRAVE_HOST: ("brave.json", "application/json"),
    DDG_HOST: ("duckduckgo.html", "text/html; charset=UTF-8"),
    WIKIPEDIA_HOST: ("wikipedia.json", "application/json; charset=utf-8"),
}


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, body: bytes, size: int = 65_536) -> None:
        self.body = body
        self.size = size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.body), self.size):
            yield self.body[start : start + self.size]


@dataclass
class Providers:
    """The three providers as recorded; ``answers`` replaces a host's answer."""

    answers: dict[str, httpx.Response] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    addresses: dict[str, Sequence[Address]] = field(
        default_factory=lambda: {host: [PUBLIC_ADDRESS] for host in RECORDED}
    )

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        host = request.url.host
        if host in self.answers:
            answer = self.answers[host]
        else:
            name, content_type = RECORDED[host]
            answer = httpx.Response(
                200, headers={"content-type": content_type}, content=fixture(name)
            )
        # As from a socket: the body streams (in chunks) rather than arriving already read.
        return httpx.Response(
            answer.status_code, headers=answer.headers, stream=_Chunks(answer.content)
        )

    def answer(self, host: str, status: int = 200, **kwargs: Any) -> None:
        self.answers[host] = httpx.Response(status, **kwargs)

    async def resolve(self, host: str, port: int) -> Sequence[Address]:
        return self.addresses.get(host, [])

    def guard(self) -> NetworkGuard:
        return NetworkGuard(resolver=self.resolve, transport=httpx.MockTransport(self))

    def tools(self, environ: Mapping[str, str] | None = None, **settings: Any) -> WebSearchTools:
        return WebSearchTools(
            WebSearchSettings(**settings),
            guard=self.guard(),
            environ={"BRAVE_SEARCH_API_KEY": KEY} if environ is None else environ,
        )

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


def search_env() -> ActivityEnvironment:
    return activity_env(activity_type="web_search", heartbeat=10, start_to_close=30)


async def search(
    tools: WebSearchTools, env: ActivityEnvironment | None = None, **args: Any
) -> WebSearchResult:
    """Run ``web_search`` in an activity context, as the worker would."""
    result: WebSearchResult = await (env or search_env()).run(
        tools.web_search, WebSearchArgs(**args), CALL
    )
    return result
