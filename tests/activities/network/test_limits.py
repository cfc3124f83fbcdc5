"""The network guard's redirects and ceilings, against real servers on loopback."""

from __future__ import annotations

import gzip
import time
import tracemalloc
import zlib
from typing import Any

import pytest

from tests.support.http_servers import (
    MapResolver,
    Route,
    certificates,
    compressed,
    drip,
    endless,
    gzip_of_zeros,
    redirect,
    serve,
    text,
)
from toolcalls.activities.network.guard import (
    Limits,
    NetworkGuard,
    NetworkTimeout,
    TooLarge,
    TooManyRedirects,
    TransportFailed,
    URLRefused,
    any_address,
)

LIMITS = Limits(
    timeout_seconds=5, max_bytes=1_000_000, max_decoded_bytes=2_000_000, max_redirects=4
)
NAMES = {"site.test": ["127.0.0.1"], "other.test": ["127.0.0.1"], "private.test": ["10.0.0.7"]}


def loopback(resolver: MapResolver | None = None, **options: Any) -> NetworkGuard:
    return NetworkGuard(
        resolver=resolver or MapResolver(NAMES),
        admit=any_address,
        allowed_ports=None,
        **options,
    )


def chain(length: int) -> dict[str, Route]:
    routes: dict[str, Route] = {f"/r{i}": redirect(f"/r{i + 1}") for i in range(length)}
    routes[f"/r{length}"] = text("end")
    return routes


async def test_four_redirects_are_followed_and_each_hop_is_resolved_once() -> None:
    resolver = MapResolver(NAMES)
    with serve(chain(4)) as server:
        response = await loopback(resolver).request(
            "GET", server.url("/r0", host="site.test"), limits=LIMITS
        )
    assert response.body == b"end"
    assert response.redirects == tuple(server.url(f"/r{i}", host="site.test") for i in (1, 2, 3, 4))
    assert response.url == server.url("/r4", host="site.test")
    assert resolver.calls == ["site.test"] * 5


async def test_the_fifth_redirect_is_refused() -> None:
    with (
        serve(chain(5)) as server,
        pytest.raises(TooManyRedirects, match="more than 4 redirects"),
    ):
        await loopback().request("GET", server.url("/r0", host="site.test"), limits=LIMITS)
    assert [r.path for r in server.requests] == ["/r0", "/r1", "/r2", "/r3", "/r4"]


async def test_without_redirects_allowed_the_redirect_itself_is_returned() -> None:
    with serve({"/": redirect("/next", 301)}) as server:
        no_follow = Limits(timeout_seconds=5, max_bytes=1000, max_decoded_bytes=1000)
        response = await loopback().request(
            "GET", server.url("/", host="site.test"), limits=no_follow
        )
    assert response.status_code == 301
    assert response.headers["location"] == "/next"
    assert response.redirects == ()


@pytest.mark.parametrize(
    "location",
    ["file:///etc/passwd", "gopher://site.test/", "ftp://site.test/", "data:text/plain,hi"],
)
async def test_a_redirect_to_another_scheme_is_refused(location: str) -> None:
    with (
        serve({"/": redirect(location)}) as server,
        pytest.raises(URLRefused, match="redirect refused: scheme must be one of"),
    ):
        await loopback().request("GET", server.url("/", host="site.test"), limits=LIMITS)


async def test_a_redirect_to_a_refused_address_is_refused_on_that_hop() -> None:
    with serve({"/": redirect("http://127.0.0.1/")}) as server:
        # The first hop's address is admitted (as if it were public); the literal is not.
        checked: list[str] = []

        def first_only(address: object) -> str | None:
            checked.append(str(address))
            return None if len(checked) == 1 else "loopback"

        resolver = MapResolver({"public.test": ["127.0.0.1"]})
        guarded = NetworkGuard(resolver=resolver, admit=first_only, allowed_ports=None)
        with pytest.raises(URLRefused, match=r"redirect refused: 127.0.0.1 is a loopback address"):
            await guarded.request("GET", server.url("/", host="public.test"), limits=LIMITS)
    assert len(server.requests) == 1
    assert checked == ["127.0.0.1", "127.0.0.1"]


async def test_a_redirect_to_a_name_with_a_private_address_is_refused() -> None:
    resolver = MapResolver(NAMES)
    guarded = NetworkGuard(
        resolver=resolver,
        admit=lambda a: "private" if str(a).startswith("10.") else None,
        allowed_ports=None,
    )
    with (
        serve({"/": redirect("http://private.test/")}) as server,
        pytest.raises(URLRefused, match=r"private address 10.0.0.7"),
    ):
        await guarded.request("GET", server.url("/", host="site.test"), limits=LIMITS)
    assert resolver.calls == ["site.test", "private.test"]


async def test_a_redirect_to_a_refused_port_is_refused() -> None:
    with serve({"/": redirect("http://site.test:6379/")}) as server:
        guarded = NetworkGuard(
            resolver=MapResolver(NAMES), admit=any_address, allowed_ports=[server.port]
        )
        with pytest.raises(URLRefused, match="redirect refused: port 6379"):
            await guarded.request("GET", server.url("/", host="site.test"), limits=LIMITS)


async def test_an_https_to_http_redirect_is_refused() -> None:
    certs = certificates()
    with serve({"/": text("plain")}) as plain:
        routes = {"/": redirect(plain.url("/", host="site.test"))}
        with serve(routes, tls=certs.server("site.test")) as secure:
            guarded = loopback(verify=certs.client())
            with pytest.raises(URLRefused, match="from https to http"):
                await guarded.request("GET", secure.url("/", host="site.test"), limits=LIMITS)
    assert plain.requests == []


HARMLESS = {
    "Accept": "text/html",
    "Accept-Language": "en",
    "User-Agent": "toolcalls-test/1",
}
CREDENTIALS = {
    "Authorization": "Bearer t",
    "Cookie": "a=b",
    "Proxy-Authorization": "Basic cA==",
    "X-Api-Key": "k",
    "X-Custom-Token": "c",
    "X-Deploy-Secret": "d",
}
SENT = {**HARMLESS, **CREDENTIALS}


def received(seen: dict[str, str]) -> dict[str, str]:
    """The caller's headers among what a server received (lowercase names)."""
    return {name: seen[name.lower()] for name in SENT if name.lower() in seen}


async def test_only_harmless_headers_follow_a_redirect_to_another_port() -> None:
    # Two servers, two origins: the first redirects to the second, which records what arrived.
    with serve({"/end": text("there")}) as second:
        routes = {"/": redirect(second.url("/end", host="site.test"))}
        with serve(routes) as first:
            response = await loopback().request(
                "GET",
                first.url("/", host="site.test"),
                limits=LIMITS,
                headers=SENT,
                secret_headers=["X-Deploy-Secret"],
            )
    assert response.body == b"there"
    assert received(first.requests[0].headers) == SENT
    crossed = second.requests[0].headers
    assert received(crossed) == HARMLESS
    assert crossed["accept-encoding"] == "gzip, deflate"
    assert crossed["host"] == f"site.test:{second.port}"


async def test_only_harmless_headers_follow_a_redirect_to_another_host() -> None:
    with serve({"/": redirect("/x")}) as server:
        server.routes["/x"] = redirect(server.url("/end", host="other.test"))
        server.routes["/end"] = text("there")
        await loopback().request(
            "GET", server.url("/", host="site.test"), limits=LIMITS, headers=SENT
        )
    same_origin, crossed = server.requests[1].headers, server.requests[2].headers
    assert received(same_origin) == SENT  # a same-origin hop keeps everything
    assert received(crossed) == HARMLESS
    assert crossed["host"] == f"other.test:{server.port}"


async def test_a_chain_that_returns_to_its_origin_stays_stripped() -> None:
    with serve({"/end": text("home")}) as first, serve({}) as second:
        second.routes["/back"] = redirect(first.url("/end", host="site.test"))
        first.routes["/"] = redirect(second.url("/back", host="site.test"))
        await loopback().request(
            "GET", first.url("/", host="site.test"), limits=LIMITS, headers=SENT
        )
    assert received(second.requests[0].headers) == HARMLESS
    assert received(first.requests[1].headers) == HARMLESS


async def test_a_secret_header_stays_home_even_under_an_allowlisted_name() -> None:
    with serve({"/end": text("there")}) as second, serve({}) as first:
        first.routes["/"] = redirect(second.url("/end", host="site.test"))
        await loopback().request(
            "GET",
            first.url("/", host="site.test"),
            limits=LIMITS,
            headers=SENT,
            secret_headers=["user-agent"],
        )
    assert first.requests[0].headers["user-agent"] == "toolcalls-test/1"
    assert "toolcalls-test/1" not in second.requests[0].headers.get("user-agent", "")


async def test_a_307_carries_its_body_and_type_across_origins_but_no_credentials() -> None:
    headers = {"Content-Type": "application/json", "X-Api-Key": "k"}
    with serve({"/in": text("ok")}) as second:
        routes = {"/": redirect(second.url("/in", host="site.test"), status=307)}
        with serve(routes) as first:
            await loopback().request(
                "POST",
                first.url("/", host="site.test"),
                limits=LIMITS,
                headers=headers,
                content=b'{"a":1}',
            )
    arrived = second.requests[0]
    assert (arrived.method, arrived.body) == ("POST", b'{"a":1}')
    assert arrived.headers["content-type"] == "application/json"
    assert "x-api-key" not in arrived.headers


async def test_a_303_turns_a_post_into_a_get_without_its_body() -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded", "X-Api-Key": "k"}
    with serve({"/form": redirect("/done", 303), "/done": text("ok")}) as server:
        await loopback().request(
            "POST",
            server.url("/form", host="site.test"),
            limits=LIMITS,
            headers=form,
            content=b"secret=1",
        )
    assert [(r.method, r.body) for r in server.requests] == [
        ("POST", b"secret=1"),
        ("GET", b""),
    ]
    then = server.requests[1].headers
    assert "content-type" not in then  # it described the body, which stayed behind
    assert then["x-api-key"] == "k"  # same origin


async def test_an_endless_body_stops_at_the_wire_ceiling() -> None:
    progress: list[int] = []
    # The body never ends: only the ceiling can end the request, and TooLarge says it did.
    with (
        serve({"/": endless()}) as server,
        pytest.raises(TooLarge, match="body exceeds 1000000 bytes"),
    ):
        await loopback().request(
            "GET", server.url("/", host="site.test"), limits=LIMITS, on_progress=progress.append
        )
    assert progress
    assert progress[-1] <= 1_000_000
    assert progress == sorted(progress)


async def test_a_large_declared_body_stops_at_the_ceiling_without_buffering_it() -> None:
    ten_mb = b"y" * 10_000_000
    with serve({"/": text(ten_mb)}) as server:
        small = Limits(timeout_seconds=5, max_bytes=2_000_000, max_decoded_bytes=2_000_000)
        tracemalloc.start()
        try:
            with pytest.raises(TooLarge):
                await loopback().request("GET", server.url("/", host="site.test"), limits=small)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    # The server's copy is allocated before tracing starts; the client never holds 10 MB.
    assert peak < 6_000_000


async def test_a_slow_drip_is_stopped_by_the_per_hop_deadline() -> None:
    with serve({"/": drip(0.1)}) as server:
        quick = Limits(timeout_seconds=0.6, max_bytes=1_000_000, max_decoded_bytes=1_000_000)
        started = time.monotonic()
        with pytest.raises(NetworkTimeout, match=r"within 0.6 s"):
            await loopback().request("GET", server.url("/", host="site.test"), limits=quick)
    # At its 0.6 s deadline, not when the 1 MB drip would end (a day from now).
    assert 0.5 < time.monotonic() - started < 30


async def test_a_gzip_bomb_stops_at_the_decoded_ceiling_quickly_and_in_bounded_memory() -> None:
    bomb = gzip_of_zeros(100_000_000)
    assert len(bomb) < 200_000
    with serve({"/": compressed(bomb)}) as server:
        tracemalloc.start()
        try:
            # Stopped at the ceiling: 2 MB of the 100 MB decoded, never all of it in memory.
            with pytest.raises(TooLarge, match="decoded body exceeds 2000000 bytes"):
                await loopback().request("GET", server.url("/", host="site.test"), limits=LIMITS)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 10_000_000


async def test_deflate_raw_and_zlib_both_decode_within_the_ceiling() -> None:
    body = b"hello " * 1000
    raw = zlib.compressobj(wbits=-15)
    raw_deflate = raw.compress(body) + raw.flush()
    routes = {
        "/zlib": compressed(zlib.compress(body), encoding="deflate"),
        "/raw": compressed(raw_deflate, encoding="deflate"),
        "/gzip": compressed(gzip.compress(body), encoding="x-gzip"),
    }
    with serve(routes) as server:
        guarded = loopback()
        for path in routes:
            response = await guarded.request(
                "GET", server.url(path, host="site.test"), limits=LIMITS
            )
            assert response.body == body


async def test_an_unsupported_or_broken_encoding_is_a_permanent_failure() -> None:
    routes = {
        "/br": compressed(b"\x1b\x00", encoding="br"),
        "/twice": compressed(b"x", encoding="gzip, gzip"),
        "/broken": compressed(b"not gzip at all", encoding="gzip"),
    }
    with serve(routes) as server:
        guarded = loopback()
        for path, reason in [
            ("/br", "unsupported content-encoding"),
            ("/twice", "unsupported content-encoding"),
            ("/broken", "does not decode"),
        ]:
            with pytest.raises(TransportFailed, match=reason) as failed:
                await guarded.request("GET", server.url(path, host="site.test"), limits=LIMITS)
            assert not failed.value.transient
