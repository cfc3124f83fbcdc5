"""``fetch_url`` called directly (in a real activity context): text, charsets, errors, SSRF cases.

Pages come from real servers on loopback, reached through a guard that admits loopback; the SSRF
cases use the production guard, which must refuse them before any connection.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import time
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support.http_servers import MapResolver, drip, redirect, serve, text
from toolcalls.activities.base import CallContext
from toolcalls.activities.network import html_text
from toolcalls.activities.network.fetch import FetchTools, FetchUrlArgs, FetchUrlResult, charset
from toolcalls.activities.network.guard import Limits, NetworkGuard, any_address
from toolcalls.activities.network.html_text import TooSlow, extract
from toolcalls.activities.network.settings import FetchSettings
from toolcalls.workflows.models.call import ErrorCode

CALL = CallContext(
    workflow_id="wf", call_id="c1", idempotency_key="wf:c1", approval=None, precondition=None
)
PAGE = """<!doctype html><html><head><title> The
  Title </title><style>body{color:red}</style><script>var secret = 1;</script>
<meta charset="utf-8"></head><body>
<h1>Heading</h1><p>First   paragraph
with <b>bold</b> text.</p><div hidden>hidden div</div><p style="display: none">gone</p>
<span aria-hidden="true">decor</span><noscript>enable js</noscript><template>tpl</template>
<ul><li>one</li><li>two</li></ul><input type="hidden" value="h"><p>caf&eacute; &amp; more</p>
<svg><title>icon</title><text>svg text</text></svg>
</body></html>"""


def loopback_tools(**options: Any) -> FetchTools:
    guard = NetworkGuard(
        resolver=MapResolver({"site.test": ["127.0.0.1"]}), admit=any_address, allowed_ports=None
    )
    return FetchTools(FetchSettings(), guard=guard, **options)


async def fetch(tools: FetchTools, url: str, max_chars: int | None = None) -> FetchUrlResult:
    args = FetchUrlArgs(url=url, max_chars=max_chars)
    return await ActivityEnvironment().run(tools.fetch_url, args, CALL)


async def refused(tools: FetchTools, url: str) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await fetch(tools, url)
    return caught.value


def fixable(error: ApplicationError) -> list[str]:
    return list(error.details[0]["fixable_args"])


async def test_html_becomes_readable_text_with_its_title() -> None:
    with serve({"/": text(PAGE, "text/html; charset=utf-8")}) as server:
        result = await fetch(loopback_tools(), server.url("/", host="site.test"))
    assert result.title == "The Title"
    assert result.text == "Heading\nFirst paragraph with bold text.\none\ntwo\ncafé & more"
    assert result.content_type == "text/html"
    assert (result.status_code, result.truncated, result.untrusted_content) == (200, False, True)
    assert server.requests[0].headers["user-agent"] == "toolcalls-fetch/0.1"


async def test_text_is_cut_at_max_chars_and_says_so() -> None:
    body = "abcdefghij" * 10
    with serve({"/": text(body)}) as server:
        cut = await fetch(loopback_tools(), server.url("/", host="site.test"), max_chars=15)
        whole = await fetch(loopback_tools(), server.url("/", host="site.test"), max_chars=100)
    assert (cut.text, cut.truncated, cut.title) == ("abcdefghijabcde", True, None)
    assert (whole.text, whole.truncated) == (body, False)


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        ("application/json", b'{"a": "\xc3\xa9"}', '{"a": "é"}'),
        ("application/ld+json", b"{}", "{}"),
        ("application/atom+xml", b"<feed/>", "<feed/>"),
        ("text/xml", b"<?xml version='1.0' encoding='latin-1'?><a>\xe9</a>", "<a>é</a>"),
        ("text/markdown", b"# Title\r\n\r\ntext", "# Title\n\ntext"),
        ("text/csv", b"a,b\n1,2", "a,b\n1,2"),
        ("text/plain; charset=iso-8859-1", b"caf\xe9", "café"),
        ("text/plain", b"\xef\xbb\xbfbom", "bom"),
        ("text/plain", b"bad \xff byte", "bad \ufffd byte"),
        ("text/html", b"<meta charset='windows-1252'><p>\x93q\x94</p>", "\u201cq\u201d"),
        ("text/html; charset=utf-8", b"<meta charset='latin-1'><p>\xc3\xa9</p>", "é"),
    ],
)
async def test_supported_types_and_their_charsets(
    content_type: str, body: bytes, expected: str
) -> None:
    with serve({"/": text(body, content_type)}) as server:
        result = await fetch(loopback_tools(), server.url("/", host="site.test"))
    assert expected in result.text
    assert result.content_type == content_type.split(";")[0]


def test_charset_order_is_bom_then_header_then_document_then_utf8() -> None:
    assert charset("text/html", b"\xef\xbb\xbf<meta charset=latin-1>", "text/html") == "utf-8-sig"
    assert charset("text/html; charset=latin-1", b"<meta charset=utf-8>", "text/html") == (
        "iso8859-1"
    )
    assert charset("text/html", b"<meta charset=utf-16>", "text/html") == "utf-8"
    assert charset("text/html", b"<meta charset=nonsense>", "text/html") == "utf-8"
    assert charset("text/plain", b"plain", "text/plain") == "utf-8"


@pytest.mark.parametrize(
    ("content_type", "problem"),
    [
        ("application/octet-stream", "unsupported content type 'application/octet-stream'"),
        ("image/png", "unsupported content type 'image/png'"),
        ("text/plain; charset=klingon", "unknown charset 'klingon'"),
        ("text/plain; charset=rot13", "charset does not decode text"),
    ],
)
async def test_other_content_is_refused(content_type: str, problem: str) -> None:
    with serve({"/": text(b"\x89PNG data", content_type)}) as server:
        error = await refused(loopback_tools(), server.url("/", host="site.test"))
    assert error.type == ErrorCode.EXECUTION_FAILED
    assert problem in error.message
    assert error.non_retryable


async def test_an_empty_body_is_empty_text() -> None:
    with serve({"/": text(b"", status=204)}) as server:
        result = await fetch(loopback_tools(), server.url("/", host="site.test"))
    assert (result.status_code, result.text, result.truncated) == (204, "", False)


async def test_error_statuses_fail_and_transient_ones_may_be_retried() -> None:
    routes = {
        "/missing": text("no such page", status=404),
        "/busy": text("slow down", status=429, headers={"Retry-After": "7"}),
        "/down": text("oops", status=503),
    }
    with serve(routes) as server:
        tools = loopback_tools()
        missing = await refused(tools, server.url("/missing", host="site.test"))
        busy = await refused(tools, server.url("/busy", host="site.test"))
        down = await refused(tools, server.url("/down", host="site.test"))
    assert (
        missing.message
        == f"fetch_url: {server.url('/missing', host='site.test')} answered http 404"
    )
    assert missing.non_retryable
    assert missing.details[0]["output"]["status_code"] == 404
    assert not busy.non_retryable
    assert busy.next_retry_delay == timedelta(seconds=7)
    assert not down.non_retryable
    assert down.next_retry_delay is None


async def test_redirects_report_the_final_url() -> None:
    with serve({"/old": redirect("/new", 301), "/new": text("moved")}) as server:
        result = await fetch(loopback_tools(), server.url("/old", host="site.test"))
    assert (result.url, result.text) == (server.url("/new", host="site.test"), "moved")


async def test_a_redirect_to_another_origin_still_says_who_asks_and_for_what() -> None:
    with serve({"/page": text("elsewhere")}) as other, serve({}) as first:
        first.routes["/"] = redirect(other.url("/page", host="site.test"))
        result = await fetch(loopback_tools(), first.url("/", host="site.test"))
    assert result.text == "elsewhere"
    crossed = other.requests[0].headers
    assert crossed["user-agent"] == "toolcalls-fetch/0.1"
    assert crossed["accept"].startswith("text/html")


async def test_limits_map_to_typed_errors() -> None:
    chain = {f"/r{i}": redirect(f"/r{i + 1}") for i in range(5)}
    big = {"/big": text(b"z" * 1_000_001)}
    with serve({**chain, **big, "/slow": drip(0.1)}) as server:
        quick = Limits(
            timeout_seconds=0.5, max_bytes=1_000_000, max_decoded_bytes=4_000_000, max_redirects=4
        )
        tools = loopback_tools(limits=quick)
        too_many = await refused(tools, server.url("/r0", host="site.test"))
        too_big = await refused(tools, server.url("/big", host="site.test"))
        too_slow = await refused(tools, server.url("/slow", host="site.test"))
    assert (too_many.type, too_many.non_retryable) == (ErrorCode.EXECUTION_FAILED, True)
    assert "more than 4 redirects" in too_many.message
    assert too_big.message == "fetch_url: response too large: body exceeds 1000000 bytes"
    assert too_big.non_retryable
    assert too_slow.message == "fetch_url: no complete response within 0.5 s"
    assert not too_slow.non_retryable


async def test_a_slow_response_keeps_heartbeating_until_the_deadline() -> None:
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=0.3))
    env.on_heartbeat = lambda *details: beats.append(details[0])
    slow = Limits(timeout_seconds=1.0, max_bytes=1_000_000, max_decoded_bytes=1_000_000)
    with serve({"/": drip(0.05)}) as server:
        args = FetchUrlArgs(url=server.url("/", host="site.test"))
        with pytest.raises(ApplicationError, match="within 1 s"):
            await env.run(loopback_tools(limits=slow).fetch_url, args, CALL)
    assert len(beats) >= 5
    assert beats[0]["bytes"] == 0
    assert beats[-1]["bytes"] > 5
    assert beats[-1]["url"] == args.url


SSRF = [
    ("http://127.0.0.1/", "loopback"),
    ("http://localhost./", "localhost is refused"),
    ("http://LOCALHOST/", "localhost is refused"),
    ("http://app.localhost/", "refused"),
    ("http://2130706433/", "loopback address 127.0.0.1"),
    ("http://0x7f000001/", "loopback address 127.0.0.1"),
    ("http://017700000001/", "loopback address 127.0.0.1"),
    ("http://127.1/", "loopback address 127.0.0.1"),
    ("http://0/", "unspecified"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::127.0.0.1]/", "loopback"),
    ("http://[64:ff9b::7f00:1]/", "loopback"),
    ("http://[2002:7f00:1::]/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[fd00:ec2::254]/", "unique-local"),
    ("http://metadata.google.internal/", "refused"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://100.64.0.1/", "cgnat"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://192.0.0.8/", "reserved"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "reserved"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[fec0::1]/", "site-local"),
    ("http://example.com:6379/", "port 6379 is not allowed"),
    ("https://example.com:8443/", "port 8443 is not allowed"),
]


@pytest.mark.parametrize(("url", "reason"), SSRF)
async def test_the_production_guard_refuses_non_public_targets(url: str, reason: str) -> None:
    error = await refused(FetchTools(FetchSettings()), url)
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.message.startswith("fetch_url: url: ")
    assert reason in error.message
    assert fixable(error) == ["url"]
    assert error.non_retryable


async def test_a_name_resolving_to_public_and_private_addresses_is_refused() -> None:
    resolver = MapResolver({"mixed.example": ["93.184.215.14", "10.0.0.5"]})
    tools = FetchTools(FetchSettings(), guard=NetworkGuard(resolver=resolver))
    error = await refused(tools, "https://mixed.example/")
    assert "private address 10.0.0.5" in error.message
    assert resolver.calls == ["mixed.example"]


@pytest.mark.parametrize(
    "url",
    [
        "http://user:pass@example.com/",
        "http://example.com\\@evil.com/",
        "http://a@b@evil.com/",
        "http://127.0.0.1:80@evil.com/",
        "http://example.com/\tx",
        "http://example.com/\nx",
        "http://example.com/\rx",
        "http://example.com/\x00x",
        "http://example.com/a b",
        "ftp://example.com/",
        "http://0177.0.0.1/",
        "http://[fe80::1%25eth0]/",
        "http+unix://%2Fvar%2Frun%2Fdocker.sock/",
        "https://example.com/" + "a" * 2048,
    ],
)
def test_bad_url_shapes_are_refused_by_the_arguments(url: str) -> None:
    with pytest.raises(ValidationError) as caught:
        FetchUrlArgs(url=url)
    assert caught.value.errors()[0]["loc"] == ("url",)


@pytest.mark.parametrize("max_chars", [0, -1, 50_001])
def test_max_chars_is_1_to_50000(max_chars: int) -> None:
    with pytest.raises(ValidationError):
        FetchUrlArgs(url="https://example.com/", max_chars=max_chars)
    assert FetchUrlArgs(url="https://example.com/", max_chars=None).max_chars == 12_000


def test_literal_addresses_resolve_without_a_lookup() -> None:
    assert ipaddress.ip_address("127.0.0.1").is_loopback  # the premise of the SSRF table


async def test_a_canceled_fetch_stops_mid_transfer() -> None:
    env = ActivityEnvironment()
    with serve({"/": drip(0.05)}) as server:
        args = FetchUrlArgs(url=server.url("/", host="site.test"))
        call = asyncio.create_task(env.run(loopback_tools().fetch_url, args, CALL))
        await asyncio.sleep(0.3)
        assert not call.done()
        env.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, 2)


def test_html_extraction_is_bounded_in_time_on_markup_the_parser_is_quadratic_on() -> None:
    # html.parser rescans the rest of the document for each unterminated tag when it is closed:
    # 180 KB of these took 80 s before extraction had a deadline.
    hostile = "<a b='" * 30_000
    started = time.monotonic()
    with pytest.raises(TooSlow):
        extract(hostile, seconds=0.5)
    # Stopped near its 0.5 s deadline, not after the 80 s the whole parse would take.
    assert time.monotonic() - started < 30
    assert extract("<p>fine</p>", seconds=0.5).text == "fine"


async def test_a_page_that_takes_too_long_to_extract_is_a_permanent_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(html_text, "EXTRACT_SECONDS", 0.5)
    page = "<title>t</title>" + "<!--" * 60_000
    with serve({"/": text(page, "text/html")}) as server:
        error = await refused(loopback_tools(), server.url("/", host="site.test"))
    # "took too long" is the extraction deadline's own message: it, not the parse, ended the call.
    assert error.type == ErrorCode.EXECUTION_FAILED
    assert "took too long" in error.message
    assert error.non_retryable
