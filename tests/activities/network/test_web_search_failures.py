"""``web_search`` failures: the Brave key, provider HTTP outcomes, challenges, the guard's refusals.

Every failure is one typed error from the chosen engine; nothing falls back to another engine,
and the Brave key never appears in an error, a result or a log.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import socket
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError

from tests.support.http_servers import closed_port, resetting
from tests.support.web_search import (
    BRAVE_HOST,
    DDG_HOST,
    KEY,
    WIKIPEDIA_HOST,
    Providers,
    fixture,
    search,
    search_env,
)
from toolcalls.activities.network.guard import Address, NetworkGuard, any_address, retry_after
from toolcalls.activities.network.search.tools import WebSearchTools
from toolcalls.activities.network.settings import WebSearchSettings
from toolcalls.workflows.models.call import ErrorCode


async def failure(tools: WebSearchTools, code: ErrorCode, **args: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as info:
        await search(tools, **args)
    assert info.value.type == code.value, info.value.message
    return info.value


def fixable(error: ApplicationError) -> list[str]:
    details: dict[str, Any] = error.details[0] if error.details else {}
    return list(details.get("fixable_args", []))


async def test_a_missing_key_is_a_configuration_error_and_nothing_else_is_asked() -> None:
    providers = Providers()
    for environ in ({}, {"BRAVE_SEARCH_API_KEY": "  "}):
        error = await failure(providers.tools(environ), ErrorCode.CONFIGURATION_ERROR, query="q")
        assert "BRAVE_SEARCH_API_KEY" in error.message
        assert 'engine="wikipedia"' in error.message
        assert error.non_retryable
    # No silent fallback: no provider at all was asked.
    assert providers.requests == []


async def test_the_key_is_read_when_a_brave_search_runs_not_when_built() -> None:
    providers = Providers()
    environ: dict[str, str] = {}
    tools = providers.tools(environ)
    await failure(tools, ErrorCode.CONFIGURATION_ERROR, query="q")
    environ["BRAVE_SEARCH_API_KEY"] = "first-key"
    await search(tools, query="q")
    environ["BRAVE_SEARCH_API_KEY"] = "rotated-key"
    await search(tools, query="q")
    assert [r.headers["x-subscription-token"] for r in providers.requests] == [
        "first-key",
        "rotated-key",
    ]


async def test_the_key_variable_can_be_renamed_by_the_deployment() -> None:
    providers = Providers()
    tools = providers.tools({"SEARCH_KEY": "renamed"}, brave_key_env="SEARCH_KEY")
    await search(tools, query="q")
    assert providers.last.headers["x-subscription-token"] == "renamed"
    error = await failure(
        providers.tools({"BRAVE_SEARCH_API_KEY": KEY}, brave_key_env="SEARCH_KEY"),
        ErrorCode.CONFIGURATION_ERROR,
        query="q",
    )
    assert "SEARCH_KEY" in error.message


async def test_a_key_that_is_no_header_value_is_refused_without_echoing_it() -> None:
    providers = Providers()
    bad = "secret\r\nX-Injected: 1"
    error = await failure(
        providers.tools({"BRAVE_SEARCH_API_KEY": bad}), ErrorCode.CONFIGURATION_ERROR, query="q"
    )
    assert "secret" not in error.message
    assert providers.requests == []


async def test_keyless_engines_never_receive_the_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    providers = Providers()
    tools = providers.tools()
    results = [
        await search(tools, query="q", engine="duckduckgo"),
        await search(tools, query="q", engine="wikipedia"),
        await search(tools, query="q"),
    ]
    assert [r.url.host for r in providers.requests] == [DDG_HOST, WIKIPEDIA_HOST, BRAVE_HOST]
    assert [r.engine for r in results] == ["duckduckgo", "wikipedia", "brave"]
    for request in providers.requests:
        assert (KEY in request.headers.values()) is (request.url.host == BRAVE_HOST)
        assert KEY not in str(request.url)
        # An honest client name, never a browser's.
        agent = request.headers["user-agent"]
        assert agent == "toolcalls-web-search/0.1"
        assert not any(marker in agent for marker in ("Mozilla", "Chrome", "Safari", "Gecko"))
    assert all(KEY not in r.model_dump_json() for r in results)
    assert KEY not in caplog.text


async def test_brave_redirect_is_not_followed_and_the_key_stays_home() -> None:
    providers = Providers()
    providers.answer(BRAVE_HOST, 302, headers={"location": "https://collector.example/steal"})
    error = await failure(providers.tools(), ErrorCode.EXECUTION_FAILED, query="q")
    assert error.message == "web_search: brave answered HTTP 302; redirects are not followed"
    assert [r.url.host for r in providers.requests] == [BRAVE_HOST]


@pytest.mark.parametrize("status", [401, 403])
async def test_brave_refusing_the_key_is_a_configuration_error(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    providers = Providers()
    providers.answer(
        BRAVE_HOST, status, json={"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION"}}
    )
    error = await failure(providers.tools(), ErrorCode.CONFIGURATION_ERROR, query="q")
    assert error.non_retryable
    assert f"HTTP {status}" in error.message
    assert "BRAVE_SEARCH_API_KEY" in error.message
    assert KEY not in error.message
    assert KEY not in caplog.text


@pytest.mark.parametrize("engine", ["brave", "duckduckgo", "wikipedia"])
async def test_rate_limits_are_retryable_after_the_providers_delay(engine: str) -> None:
    providers = Providers()
    for host in (BRAVE_HOST, DDG_HOST, WIKIPEDIA_HOST):
        providers.answer(host, 429, headers={"retry-after": "30"})
    error = await failure(providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine=engine)
    assert not error.non_retryable
    assert error.next_retry_delay == timedelta(seconds=30)
    assert (
        error.message == f"web_search: {engine} answered HTTP 429 (rate limited); retry after 30 s"
    )


async def test_rate_limits_without_a_usable_delay() -> None:
    providers = Providers()
    providers.answer(BRAVE_HOST, 429)
    error = await failure(providers.tools(), ErrorCode.EXECUTION_FAILED, query="q")
    assert (error.non_retryable, error.next_retry_delay) == (False, None)
    providers.answer(BRAVE_HOST, 429, headers={"retry-after": "3600"})
    error = await failure(providers.tools(), ErrorCode.EXECUTION_FAILED, query="q")
    assert error.non_retryable
    assert "rate limited for 3600 s" in error.message


def test_retry_after_reads_seconds_and_dates() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after("7") == timedelta(seconds=7)
    assert retry_after("Wed, 01 Jan 2025 12:00:45 GMT", now) == timedelta(seconds=45)
    assert retry_after("Wed, 01 Jan 2025 11:00:00 GMT", now) == timedelta(0)
    assert retry_after("soon") is None
    assert retry_after("-5") is None
    assert retry_after(None) is None


def test_retry_after_reads_leading_zeros_and_huge_delays_by_their_value() -> None:
    assert retry_after("0000000090") == timedelta(seconds=90)
    assert retry_after("00000000000000000007") == timedelta(seconds=7)
    huge = retry_after("9" * 5000)
    assert huge is not None
    assert huge > timedelta(days=365)
    assert retry_after("0") == timedelta(0)


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (503, True), (404, False)])
async def test_provider_errors(status: int, retryable: bool) -> None:
    providers = Providers()
    providers.answer(WIKIPEDIA_HOST, status, text="oops")
    error = await failure(
        providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine="wikipedia"
    )
    assert error.non_retryable is not retryable
    assert error.message.startswith(f"web_search: wikipedia answered HTTP {status}")


async def test_duckduckgo_blocking_points_at_wikipedia() -> None:
    providers = Providers()
    providers.answer(DDG_HOST, 403, text="Forbidden")
    error = await failure(
        providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine="duckduckgo"
    )
    assert error.non_retryable
    assert 'engine="wikipedia"' in error.message


@pytest.mark.parametrize(
    ("engine", "body"),
    [
        ("brave", b"{not json"),
        ("brave", b"[]"),
        ("brave", b'{"query": {}, "web": {"results": "many"}}'),
        ("brave", b"[" * 100_000),
        ("wikipedia", b"<html>maintenance</html>"),
        ("wikipedia", b'{"pages": null}'),
    ],
)
async def test_malformed_answers_name_the_engine(engine: str, body: bytes) -> None:
    providers = Providers()
    providers.answer(BRAVE_HOST if engine == "brave" else WIKIPEDIA_HOST, content=body)
    error = await failure(providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine=engine)
    assert error.message.startswith(f"web_search: {engine} answered")
    assert error.non_retryable


@pytest.mark.parametrize("status", [200, 202])
async def test_a_duckduckgo_challenge_is_reported_not_retried_or_bypassed(status: int) -> None:
    providers = Providers()
    providers.answer(DDG_HOST, status, content=fixture("duckduckgo-challenge.html"))
    error = await failure(
        providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine="duckduckgo"
    )
    assert error.non_retryable
    assert "challenge" in error.message
    assert 'engine="wikipedia"' in error.message
    assert len(providers.requests) == 1


async def test_a_challenge_marked_only_by_an_id_is_reported_as_a_challenge() -> None:
    providers = Providers()
    providers.answer(DDG_HOST, content=b'<html><body><div id="anomaly-modal"></div></body></html>')
    error = await failure(
        providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine="duckduckgo"
    )
    assert "human-verification challenge" in error.message
    assert 'engine="wikipedia"' in error.message


@pytest.mark.parametrize(
    "page",
    [
        b"<html><body><p>Welcome to the new DuckDuckGo!</p></body></html>",
        b'<div id="links"><div class="result"><span>moved</span></div></div>',
        b"",
    ],
)
async def test_unrecognised_duckduckgo_markup_points_at_wikipedia(page: bytes) -> None:
    providers = Providers()
    providers.answer(DDG_HOST, content=page)
    error = await failure(
        providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine="duckduckgo"
    )
    assert "not recognised" in error.message
    assert 'engine="wikipedia"' in error.message


async def test_an_oversized_answer_is_cut_off_by_the_guard() -> None:
    providers = Providers()
    providers.answer(DDG_HOST, content=b'<div id="links">' + b"<div>" * 1_000_000)
    error = await failure(
        providers.tools(), ErrorCode.EXECUTION_FAILED, query="q", engine="duckduckgo"
    )
    assert "2000000 bytes" in error.message
    assert error.non_retryable


async def test_a_provider_name_resolving_to_a_private_address_is_refused() -> None:
    providers = Providers()
    providers.addresses[BRAVE_HOST] = [ipaddress.ip_address("10.0.0.7")]
    error = await failure(providers.tools(), ErrorCode.EXECUTION_FAILED, query="q")
    assert "refused by the network guard" in error.message
    assert "10.0.0.7" in error.message
    assert error.non_retryable
    assert providers.requests == []


@pytest.mark.parametrize(
    ("exception", "code"),
    [
        (httpx.ConnectError("refused"), ErrorCode.NETWORK_UNAVAILABLE),
        (httpx.ReadError("reset"), ErrorCode.NETWORK_UNAVAILABLE),
        (httpx.ReadTimeout("slow"), ErrorCode.EXECUTION_FAILED),
    ],
)
async def test_transient_network_failures_are_retryable(
    exception: Exception, code: ErrorCode
) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise exception

    providers = Providers()
    tools = providers.tools()
    tools.guard = httpx_guard(providers, fail)
    error = await failure(tools, code, query="q", engine="wikipedia")
    assert not error.non_retryable
    assert error.message.startswith("web_search: wikipedia: ")


def provider_on_loopback(providers: Providers, host: str) -> str:
    """``host`` resolves to a loopback address of its own, where the test puts port 443.

    The endpoints are fixed ``https://...:443`` URLs; an address of 127/8 no other test uses keeps
    the test's port 443 its own.
    """
    address = f"127.{random.randrange(64, 250)}.{random.randrange(1, 250)}.1"
    providers.addresses[host] = [ipaddress.ip_address(address)]
    return address


def loopback_tools(providers: Providers) -> WebSearchTools:
    guard = NetworkGuard(resolver=providers.resolve, admit=any_address)
    return WebSearchTools(WebSearchSettings(), guard=guard, environ={"BRAVE_SEARCH_API_KEY": KEY})


async def test_a_provider_that_cannot_be_reached_is_an_outage_not_the_querys_fault() -> None:
    providers = Providers()
    tools = loopback_tools(providers)
    with closed_port(provider_on_loopback(providers, WIKIPEDIA_HOST), 443):
        refused = await failure(tools, ErrorCode.NETWORK_UNAVAILABLE, query="q", engine="wikipedia")
    with resetting(provider_on_loopback(providers, BRAVE_HOST), 443) as server:
        reset = await failure(tools, ErrorCode.NETWORK_UNAVAILABLE, query="q", engine="brave")
    assert refused.message == (
        f"web_search: wikipedia: could not reach {WIKIPEDIA_HOST}:443 (connection refused)"
    )
    assert reset.message.startswith(f"web_search: brave: tls handshake with {BRAVE_HOST}:443")
    assert server.received  # the connection was made, and broken off by the peer
    assert KEY not in reset.message
    for error in (refused, reset):
        assert not error.non_retryable
        assert fixable(error) == []


@pytest.mark.parametrize("code", [socket.EAI_AGAIN, socket.EAI_NONAME])
async def test_a_provider_name_the_workers_resolver_cannot_find_is_an_outage(code: int) -> None:
    # The endpoints are fixed names that exist: "no such name" says the worker's DNS is down.
    async def resolve(host: str, port: int) -> Sequence[Address]:
        raise socket.gaierror(code, "lookup failed")

    tools = Providers().tools()
    tools.guard = NetworkGuard(resolver=resolve)
    error = await failure(tools, ErrorCode.NETWORK_UNAVAILABLE, query="q", engine="wikipedia")
    assert not error.non_retryable
    assert fixable(error) == []
    assert WIKIPEDIA_HOST in error.message


def httpx_guard(providers: Providers, handler: Any) -> NetworkGuard:
    return NetworkGuard(resolver=providers.resolve, transport=httpx.MockTransport(handler))


async def test_engines_the_deployment_does_not_offer_are_refused() -> None:
    providers = Providers()
    tools = providers.tools(engines=("wikipedia",))
    error = await failure(tools, ErrorCode.INVALID_ARGUMENTS, query="q", engine="duckduckgo")
    assert fixable(error) == ["engine"]
    assert "choose one of wikipedia" in error.message
    assert providers.requests == []


async def test_the_search_heartbeats_with_its_engine() -> None:
    providers = Providers()

    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.05)
        return providers(request)

    beats: list[Any] = []
    env = search_env()
    env.on_heartbeat = lambda *details: beats.append(details)
    tools = providers.tools()
    tools.guard = httpx_guard(providers, slow)
    await search(tools, env, query="q", engine="wikipedia")
    assert beats[0] == ({"engine": "wikipedia", "received_bytes": 0},)
