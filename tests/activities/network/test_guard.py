"""The network guard against real servers on loopback: resolution, admission, pinning, TLS, proxies.

Loopback is reachable only because these guards are built with ``any_address`` (or a rule that
admits just 127.0.0.1) and a resolver that maps test names to it; the default guard refuses it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from typing import Any

import httpcore
import httpx
import pytest

from tests.support.http_servers import MapResolver, certificates, drip, serve, text
from toolcalls.activities.network.guard import (
    Address,
    Limits,
    NetworkGuard,
    NetworkTimeout,
    PinnedTransport,
    TransportFailed,
    URLRefused,
    any_address,
    public_only,
    system_resolver,
)

LIMITS = Limits(timeout_seconds=5, max_bytes=1_000_000, max_decoded_bytes=1_000_000)


def loopback_only(address: Address) -> str | None:
    """Admit 127.0.0.1 and what the default rule admits: a rule with a checked address to reach."""
    return None if str(address) == "127.0.0.1" else public_only(address)


def guard(resolver: MapResolver, **options: Any) -> NetworkGuard:
    return NetworkGuard(resolver=resolver, admit=any_address, allowed_ports=None, **options)


async def test_a_name_is_resolved_once_and_the_connection_goes_to_the_checked_address() -> None:
    with serve({"/": text("hello")}) as server:
        resolver = MapResolver({"site.test": ["127.0.0.1"]})
        response = await guard(resolver).request(
            "GET", server.url("/", host="site.test"), limits=LIMITS
        )
    assert (response.status_code, response.body) == (200, b"hello")
    assert resolver.calls == ["site.test"]
    assert server.requests[0].headers["host"] == f"site.test:{server.port}"
    assert response.url == server.url("/", host="site.test")


async def test_dns_rebinding_connects_to_the_address_that_was_checked() -> None:
    # First answer: the admitted loopback server. Any later lookup would answer 10.0.0.5, which
    # the rule refuses; the request still lands on the first, checked answer, with one lookup.
    with serve({"/": text("checked")}) as server:
        resolver = MapResolver({"rebind.test": [["127.0.0.1"], ["10.0.0.5"]]})
        guarded = NetworkGuard(resolver=resolver, admit=loopback_only, allowed_ports=None)
        response = await guarded.request("GET", server.url("/", host="rebind.test"), limits=LIMITS)
        assert response.body == b"checked"
        assert resolver.calls == ["rebind.test"]
        with pytest.raises(URLRefused, match=r"private address 10.0.0.5"):
            await guarded.request("GET", server.url("/", host="rebind.test"), limits=LIMITS)
    assert len(server.requests) == 1


async def test_every_resolved_address_must_be_admitted() -> None:
    with serve({"/": text("never")}) as server:
        resolver = MapResolver({"mixed.test": ["93.184.215.14", "10.0.0.5"]})
        guarded = NetworkGuard(resolver=resolver, allowed_ports=None)
        with pytest.raises(URLRefused, match=r"private address 10.0.0.5"):
            await guarded.request("GET", server.url("/", host="mixed.test"), limits=LIMITS)
    assert server.connections == 0


async def test_the_pinned_connection_tries_each_admitted_address_in_order() -> None:
    with serve({"/": text("second")}) as server:
        # 127.0.0.2 refuses connections on this port; 127.0.0.1 answers.
        resolver = MapResolver({"two.test": ["127.0.0.2", "127.0.0.1"]})
        response = await guard(resolver).request(
            "GET", server.url("/", host="two.test"), limits=LIMITS
        )
    assert response.body == b"second"


async def test_a_name_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(URLRefused, match="does not resolve"):
        await guard(MapResolver({})).request("GET", "http://nowhere.test/", limits=LIMITS)


async def test_tls_verifies_the_original_host_name_while_pinned_to_loopback() -> None:
    certs = certificates()
    with serve({"/": text("secure")}, tls=certs.server("site.test")) as server:
        resolver = MapResolver({"site.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
        guarded = guard(resolver, verify=certs.client())
        good = await guarded.request("GET", server.url("/", host="site.test"), limits=LIMITS)
        assert good.body == b"secure"
        with pytest.raises(TransportFailed) as wrong_name:
            await guarded.request("GET", server.url("/", host="other.test"), limits=LIMITS)
        assert wrong_name.value.reason == "tls certificate verification failed"
        assert not wrong_name.value.transient
        untrusted = guard(resolver)  # the system roots do not know the test CA
        with pytest.raises(TransportFailed, match="certificate"):
            await untrusted.request("GET", server.url("/", host="site.test"), limits=LIMITS)


async def test_proxies_from_the_environment_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve({"/": text("direct")}) as proxy, serve({"/": text("direct")}) as target:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            monkeypatch.setenv(name, proxy.url("/"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        resolver = MapResolver({"site.test": ["127.0.0.1"]})
        response = await guard(resolver).request(
            "GET", target.url("/", host="site.test"), limits=LIMITS
        )
    assert response.body == b"direct"
    assert proxy.connections == 0
    assert len(target.requests) == 1


async def test_secret_headers_reach_the_origin_they_were_meant_for() -> None:
    with serve({"/": text("ok")}) as server:
        resolver = MapResolver({"site.test": ["127.0.0.1"]})
        await guard(resolver).request(
            "GET",
            server.url("/", host="site.test"),
            limits=LIMITS,
            headers={"Authorization": "Bearer t", "X-Api-Key": "k"},
            secret_headers=["X-Api-Key"],
        )
    seen = server.requests[0].headers
    assert (seen["authorization"], seen["x-api-key"]) == ("Bearer t", "k")
    assert seen["accept-encoding"] == "gzip, deflate"


async def test_the_request_body_and_method_are_sent_as_given() -> None:
    with serve({"/submit": text("done", status=201)}) as server:
        resolver = MapResolver({"site.test": ["127.0.0.1"]})
        response = await guard(resolver).request(
            "POST", server.url("/submit", host="site.test"), limits=LIMITS, content=b'{"a":1}'
        )
    assert response.status_code == 201
    assert (server.requests[0].method, server.requests[0].body) == ("POST", b'{"a":1}')


async def test_the_pinned_backend_refuses_other_hosts_and_unix_sockets() -> None:
    loopback = [ipaddress.ip_address("127.0.0.1")]
    transport = PinnedTransport("site.test", loopback, certificates().client())
    pool = transport._pool
    backend = pool._network_backend
    with pytest.raises(TransportFailed, match="unchecked host") as other:
        await backend.connect_tcp("evil.test", 80)
    assert not other.value.transient
    with pytest.raises(TransportFailed, match="unix sockets"):
        await backend.connect_unix_socket("/run/docker.sock")
    await transport.aclose()


async def test_the_httpcore_seam_we_pin_through_still_exists() -> None:
    # PinnedTransport relies on httpcore's public network-backend seam: the pool must accept a
    # backend and route every connection through its connect_tcp. If an upgrade moves the seam,
    # this fails before any pinning silently stops happening.
    connects: list[tuple[str, int]] = []

    class Recording(httpcore.AsyncNetworkBackend):
        def __init__(self) -> None:
            self.inner = httpcore.AnyIOBackend()

        async def connect_tcp(self, host: str, port: int, **options: Any) -> object:  # type: ignore[override]
            connects.append((host, port))
            return await self.inner.connect_tcp("127.0.0.1", port, **options)

    with serve({"/": text("seam")}) as server:
        async with httpcore.AsyncConnectionPool(network_backend=Recording()) as pool:
            response = await pool.request("GET", f"http://seam.test:{server.port}/")
    assert response.content == b"seam"
    assert connects == [("seam.test", server.port)]


async def test_a_mock_transport_answers_after_the_checks_have_run() -> None:
    requests: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, text="mocked")

    resolver = MapResolver({"api.test": ["93.184.215.14"], "bad.test": ["10.1.1.1"]})
    mocked = NetworkGuard(resolver=resolver, transport=httpx.MockTransport(answer))
    response = await mocked.request("GET", "https://api.test/v1", limits=LIMITS)
    assert response.body == b"mocked"
    with pytest.raises(URLRefused, match="private"):
        await mocked.request("GET", "https://bad.test/v1", limits=LIMITS)
    with pytest.raises(URLRefused, match="port 8443"):
        await mocked.request("GET", "https://api.test:8443/v1", limits=LIMITS)
    assert [str(r.url) for r in requests] == ["https://api.test/v1"]


async def test_cancellation_closes_the_connection() -> None:
    release = asyncio.Event()

    with serve({"/": text("late")}) as server:
        resolver = MapResolver({"site.test": ["127.0.0.1"]})

        async def slow(host: str, port: int) -> Sequence[Address]:
            await release.wait()
            return await resolver(host, port)

        guarded = NetworkGuard(resolver=slow, admit=any_address, allowed_ports=None)
        task = asyncio.create_task(
            guarded.request("GET", server.url("/", host="site.test"), limits=LIMITS)
        )
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert server.connections == 0


async def test_a_host_name_the_system_resolver_cannot_encode_is_refused() -> None:
    # Empty or over-long labels pass the URL parser but fail the idna codec inside getaddrinfo.
    for host in ("a" * 64 + ".example", "a..b.example"):
        with pytest.raises(URLRefused, match="not a valid host name"):
            await system_resolver(host, 80)


async def test_the_guard_says_whether_the_request_may_have_been_sent() -> None:
    # A listener that accepts and never answers the TLS handshake: the deadline runs out before
    # a byte of the request is written. A server that answers late has the request already.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        resolver = MapResolver({"site.test": ["127.0.0.1"]})
        quick = Limits(timeout_seconds=0.3, max_bytes=1_000, max_decoded_bytes=1_000)
        with pytest.raises(NetworkTimeout) as handshake:
            await guard(resolver).request("POST", f"https://site.test:{port}/", limits=quick)
        assert handshake.value.request_sent is False
    with pytest.raises(URLRefused) as unresolved:
        await guard(MapResolver({})).request("POST", "http://nowhere.test/", limits=quick)
    assert unresolved.value.request_sent is False
    with serve({"/": drip(0.05)}) as server, pytest.raises(NetworkTimeout) as late:
        await guard(resolver).request(
            "POST", server.url("/", host="site.test"), limits=quick, content=b"{}"
        )
    assert late.value.request_sent is True
