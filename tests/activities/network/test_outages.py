"""Outages are not the model's fault: the guard and ``fetch_url`` against real network failures.

A refused port, a listener that resets, one that never takes the connection, a TLS handshake the
peer breaks off, a resolver that cannot answer: each is ``NetworkUnavailable`` in the guard and
``network_unavailable`` (retryable, nothing to fix) from the tool. A name the resolver says does
not exist, and an address the policy refuses, stay the URL's fault.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support.http_servers import (
    MapResolver,
    black_hole,
    certificates,
    closed_port,
    resetting,
    serve,
    text,
)
from toolcalls.activities.base import CallContext
from toolcalls.activities.network import guard as guard_module
from toolcalls.activities.network.fetch import FetchTools, FetchUrlArgs
from toolcalls.activities.network.guard import (
    Address,
    Limits,
    NetworkGuard,
    NetworkTimeout,
    NetworkUnavailable,
    NoSuchHost,
    TransportFailed,
    URLRefused,
    any_address,
)
from toolcalls.activities.network.settings import FetchSettings
from toolcalls.workflows.models.call import ErrorCode

LIMITS = Limits(timeout_seconds=5, max_bytes=1_000_000, max_decoded_bytes=1_000_000)
QUICK = Limits(timeout_seconds=0.5, max_bytes=1_000_000, max_decoded_bytes=1_000_000)
CALL = CallContext(
    workflow_id="wf", call_id="c1", idempotency_key="wf:c1", approval=None, precondition=None
)


def guard(resolver: Any = None, **options: Any) -> NetworkGuard:
    return NetworkGuard(
        resolver=resolver or MapResolver({"site.test": ["127.0.0.1"]}),
        admit=any_address,
        allowed_ports=None,
        **options,
    )


def failing_resolver(code: int) -> Any:
    """A resolver that fails as getaddrinfo does, with ``code`` (``socket.EAI_*``)."""

    async def resolve(host: str, port: int) -> Sequence[Address]:
        raise socket.gaierror(code, "lookup failed")

    return resolve


async def fetch_failure(tools: FetchTools, url: str) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(tools.fetch_url, FetchUrlArgs(url=url), CALL)
    return caught.value


def assert_unavailable(error: ApplicationError, *words: str) -> None:
    assert error.type == ErrorCode.NETWORK_UNAVAILABLE, error.message
    assert not error.non_retryable
    assert error.details[0]["fixable_args"] == []
    assert "try again later" in error.message
    for word in words:
        assert word in error.message


async def test_a_refused_connection_is_an_outage_and_nothing_was_sent() -> None:
    with closed_port() as port:
        with pytest.raises(NetworkUnavailable) as refused:
            await guard().request("POST", f"http://site.test:{port}/", limits=LIMITS)
        assert refused.value.reason == f"could not reach site.test:{port} (connection refused)"
        assert refused.value.request_sent is False
        tools = FetchTools(FetchSettings(), guard=guard())
        error = await fetch_failure(tools, f"http://site.test:{port}/")
    assert_unavailable(error, f"site.test:{port}", "connection refused")


async def test_a_connection_reset_is_an_outage() -> None:
    with resetting() as server:
        with pytest.raises(NetworkUnavailable, match=r"broke off \(connection reset\)") as reset:
            await guard().request("GET", f"http://site.test:{server.port}/", limits=LIMITS)
        assert reset.value.request_sent is True  # the request was written before the reset
        error = await fetch_failure(
            FetchTools(FetchSettings(), guard=guard()), f"http://site.test:{server.port}/page"
        )
    assert_unavailable(error, "connection reset")
    assert any(b"GET /page" in first for first in server.received)


async def test_a_connection_that_is_never_taken_is_an_outage() -> None:
    with black_hole() as port:
        with pytest.raises(NetworkUnavailable, match=r"no connection within 0\.5 s") as hung:
            await guard().request("GET", f"http://site.test:{port}/", limits=QUICK)
        assert hung.value.request_sent is False
        tools = FetchTools(FetchSettings(), guard=guard(), limits=QUICK)
        error = await fetch_failure(tools, f"http://site.test:{port}/")
    assert_unavailable(error, f"could not reach site.test:{port}")


async def test_a_tls_handshake_the_peer_breaks_off_is_an_outage() -> None:
    certs = certificates()
    with resetting() as server:
        with pytest.raises(NetworkUnavailable, match=r"tls handshake with site\.test") as broken:
            await guard(verify=certs.client()).request(
                "GET", f"https://site.test:{server.port}/", limits=LIMITS
            )
        assert broken.value.request_sent is False  # only the handshake left
        tools = FetchTools(FetchSettings(), guard=guard(verify=certs.client()))
        error = await fetch_failure(tools, f"https://site.test:{server.port}/")
    assert_unavailable(error, "tls handshake")


async def test_a_certificate_that_does_not_verify_is_not_an_outage() -> None:
    certs = certificates()
    with serve({"/": text("secure")}, tls=certs.server("other.test")) as server:
        with pytest.raises(TransportFailed, match="certificate") as untrusted:
            await guard(verify=certs.client()).request(
                "GET", server.url("/", host="site.test"), limits=LIMITS
            )
        assert not untrusted.value.transient
        tools = FetchTools(FetchSettings(), guard=guard(verify=certs.client()))
        error = await fetch_failure(tools, server.url("/", host="site.test"))
    assert error.type == ErrorCode.EXECUTION_FAILED
    assert error.non_retryable


@pytest.mark.parametrize(
    ("code", "detail"),
    [
        (socket.EAI_AGAIN, "the resolver did not answer"),
        (socket.EAI_FAIL, "the resolver failed"),
    ],
)
async def test_a_resolver_that_cannot_answer_is_an_outage(code: int, detail: str) -> None:
    with pytest.raises(NetworkUnavailable) as failed:
        await guard(failing_resolver(code)).request("GET", "http://site.test/", limits=LIMITS)
    assert failed.value.reason == f"lookup of site.test failed for now ({detail})"
    assert failed.value.request_sent is False
    tools = FetchTools(FetchSettings(), guard=guard(failing_resolver(code)))
    assert_unavailable(await fetch_failure(tools, "http://site.test/"), detail)


async def test_a_lookup_that_runs_out_of_time_is_an_outage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def stuck(host: str, port: int) -> Sequence[Address]:
        await asyncio.sleep(5)
        return []

    monkeypatch.setattr(guard_module, "DNS_TIMEOUT_SECONDS", 0.2)
    error = await fetch_failure(FetchTools(FetchSettings(), guard=guard(stuck)), "http://a.test/")
    assert_unavailable(error, "dns lookup of a.test timed out")


@pytest.mark.parametrize("code", [socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5)])
async def test_a_name_that_does_not_exist_is_the_urls_fault(code: int) -> None:
    # The resolver answered: there is no such host. The model wrote it; the model fixes it.
    with pytest.raises(NoSuchHost, match="does not resolve"):
        await guard(failing_resolver(code)).request("GET", "http://typo.test/", limits=LIMITS)
    tools = FetchTools(FetchSettings(), guard=guard(failing_resolver(code)))
    error = await fetch_failure(tools, "http://typo.test/")
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.details[0]["fixable_args"] == ["url"]
    assert error.non_retryable
    assert error.message == "fetch_url: url: host typo.test does not resolve (no such name)"


async def test_the_system_resolver_classifies_its_own_failures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = {
        "down.test": socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
        "typo.test": socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
    }

    async def getaddrinfo(host: str, *args: object, **kwargs: object) -> object:
        raise answers[host]

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    with pytest.raises(NetworkUnavailable, match="failed for now"):
        await guard_module.system_resolver("down.test", 443)
    with pytest.raises(NoSuchHost, match="does not resolve"):
        await guard_module.system_resolver("typo.test", 443)


async def test_a_refused_address_is_still_the_urls_fault_and_no_outage() -> None:
    # The guard's refusals stay as they were: the model's to fix (or the policy's).
    tools = FetchTools(FetchSettings())
    error = await fetch_failure(tools, "http://127.0.0.1/")
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.details[0]["fixable_args"] == ["url"]
    with pytest.raises(URLRefused) as refused:
        await NetworkGuard().request("GET", "http://10.0.0.1/", limits=LIMITS)
    assert not isinstance(refused.value, NetworkUnavailable | NoSuchHost)


async def test_a_slow_server_after_connecting_is_a_timeout_not_an_outage() -> None:
    # Connected and the request sent: the service was reachable, it did not answer in time.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        with pytest.raises(NetworkTimeout):
            await guard().request("GET", f"http://site.test:{port}/", limits=QUICK)
