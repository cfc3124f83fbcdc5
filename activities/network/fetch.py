"""``fetch_url``: bounded, readable text from a public HTTP or HTTPS URL.

What it can touch: public web servers on ports 80 and 443, through the network guard
(``toolcalls.activities.network.guard``), which refuses credentials in URLs, other schemes and
ports, every non-public address (on the first hop and on each of at most four redirects), HTTPS
downgrades and proxies from the environment, and bounds every hop to 10 s and 1,000,000 bytes on the
wire. Only text comes back: HTML as readable text with its title, plain text, Markdown, CSV, JSON
and XML as they are; everything else is refused. Returned text is untrusted content and is marked
so.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator, Field

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.network.guard import (
    MAX_URL_CHARS,
    GuardedResponse,
    Limits,
    NetworkGuard,
    NetworkTimeout,
    NetworkUnavailable,
    TooLarge,
    TooManyRedirects,
    TransportFailed,
    URLRefused,
    parse_url,
    retry_after,
)
from toolcalls.activities.network.html_text import extract
from toolcalls.activities.network.settings import FetchSettings
from toolcalls.activities.progress import ProgressPublisher, published, received
from toolcalls.workflows.models.call import ErrorCode

DEFAULT_MAX_CHARS = 12_000
MAX_CHARS = 50_000
"""``max_chars`` is 1-50,000 (spec)."""
FETCH_MAX_BYTES = 1_000_000
"""Body bytes on the wire, per request (spec)."""
FETCH_MAX_DECODED_BYTES = 4_000_000
"""Body bytes after gzip/deflate decoding: room for verbose HTML, not for a compression bomb."""
FETCH_MAX_REDIRECTS = 4
FETCH_TIMEOUT_SECONDS = 10.0
"""Per request or redirect, connect to last byte (spec); DNS is bounded separately."""
FETCH_LIMITS = Limits(
    timeout_seconds=FETCH_TIMEOUT_SECONDS,
    max_bytes=FETCH_MAX_BYTES,
    max_decoded_bytes=FETCH_MAX_DECODED_BYTES,
    max_redirects=FETCH_MAX_REDIRECTS,
)
MAX_RETRY_AFTER = timedelta(seconds=60)
"""The longest ``Retry-After`` honoured as the next attempt's delay."""
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset(
    {
        "text/plain",
        "text/markdown",
        "text/x-markdown",
        "text/csv",
        "application/json",
        "application/xml",
        "text/xml",
    }
)
"""Returned as decoded text, as are ``application/*+json`` and ``application/*+xml``."""
ACCEPT = "text/html, application/xhtml+xml, text/plain, text/markdown, application/json, " + (
    "application/xml;q=0.9, text/*;q=0.8"
)

_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE
)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]{0,200}encoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})""")
_SNIFF_BYTES = 4_096
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _url(url: str) -> str:
    # Shape only, before the call is planned; ports, names and addresses are checked when it runs.
    try:
        parse_url(url, allowed_ports=None)
    except URLRefused as exc:
        raise ValueError(exc.reason.removeprefix("url: ")) from None
    return url


class FetchUrlArgs(ToolArgs):
    url: Annotated[str, AfterValidator(_url)] = Field(
        min_length=1,
        max_length=MAX_URL_CHARS,
        description=(
            "Public http:// or https:// URL of at most 2048 characters, without credentials, on "
            "the standard port."
        ),
    )
    max_chars: int = Field(
        default=DEFAULT_MAX_CHARS,
        ge=1,
        le=MAX_CHARS,
        description="Most characters of readable text to return (1-50000).",
    )


class FetchUrlResult(ToolResult):
    url: str
    """The final URL, after redirects."""
    status_code: int
    content_type: str
    """The media type, lowercase and without parameters (``text/html``)."""
    title: str | None
    """The HTML ``<title>``; ``None`` for other types or when there is none."""
    text: str
    truncated: bool
    """Whether ``text`` was cut at ``max_chars``."""
    untrusted_content: bool = True


def media_type(header: str) -> str:
    """``Text/HTML; charset=UTF-8`` -> ``text/html``."""
    return header.split(";", 1)[0].strip().lower()


def supported(kind: str) -> bool:
    """Whether ``fetch_url`` returns this media type."""
    if kind in HTML_TYPES or kind in TEXT_TYPES:
        return True
    return kind.startswith("application/") and kind.endswith(("+json", "+xml"))


def _declared_charset(header: str) -> str | None:
    for param in header.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def _known(label: str) -> str | None:
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def charset(header: str, body: bytes, kind: str) -> str:
    """The body's encoding: byte-order mark, then the header, then the document, then UTF-8.

    Raises ``ValueError`` for a charset the header declares and Python does not know.
    """
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    declared = _declared_charset(header)
    if declared is not None:
        known = _known(declared)
        if known is None:
            raise ValueError(f"unknown charset {declared[:40]!r}")
        return known
    head = body[:_SNIFF_BYTES]
    found = _META_CHARSET.search(head) if kind in HTML_TYPES else _XML_ENCODING.search(head)
    if found is not None:
        known = _known(found.group(1).decode("ascii"))
        # A document cannot be UTF-16 and still declare so in ASCII: HTML's own rule.
        if known is not None and not known.startswith("utf-16"):
            return known
    return "utf-8"


def readable(body: bytes, header: str, max_chars: int) -> tuple[str | None, str, bool]:
    """(title, text, truncated) of a supported body; CPU-bound, run it off the loop."""
    kind = media_type(header)
    try:
        decoded = body.decode(charset(header, body, kind), errors="replace")
    except LookupError as exc:  # a codec that names itself but does not decode text
        raise ValueError("charset does not decode text") from exc
    decoded = decoded.replace("\r\n", "\n").replace("\r", "\n")
    title: str | None = None
    if kind in HTML_TYPES:
        page = extract(decoded)
        title, decoded = page.title, page.text
    return title, decoded[:max_chars], len(decoded) > max_chars


def _retry_after(value: str | None) -> timedelta | None:
    delay = retry_after(value)
    return None if delay is None else min(delay, MAX_RETRY_AFTER)


class FetchTools:
    """``fetch_url``: public destinations only, by the guard's default rule.

    ``guard`` and ``limits`` are seams for tests (a loopback admission rule, short deadlines); a
    deployment has neither: the spec fixes what a fetch may reach and how much it may read.
    """

    def __init__(
        self,
        settings: FetchSettings,
        *,
        guard: NetworkGuard | None = None,
        limits: Limits = FETCH_LIMITS,
    ) -> None:
        self.settings = settings
        self._guard = guard or NetworkGuard()
        self._limits = limits

    async def fetch_url(self, args: FetchUrlArgs, call: CallContext) -> FetchUrlResult:
        """Fetch ``url`` and return its readable text, at most ``max_chars`` characters."""
        async with (
            Heartbeat(url=args.url, bytes=0) as beat,
            published(ProgressPublisher.for_activity()) as progress,
        ):
            response = await self._get(args.url, beat, progress)
            content_type = response.headers.get("content-type", "")
            kind = media_type(content_type)
            if not 200 <= response.status_code < 300:
                raise self._status_error(response)
            if not response.body:
                title, text, truncated = None, "", False
            elif not supported(kind):
                raise tool_error(
                    ErrorCode.EXECUTION_FAILED,
                    f"fetch_url: unsupported content type {kind or '(none)'!r}; "
                    "only html, text, markdown, csv, json and xml are returned",
                    output={"url": response.url, "status_code": response.status_code},
                )
            else:
                try:
                    title, text, truncated = await asyncio.to_thread(
                        readable, response.body, content_type, args.max_chars
                    )
                except ValueError as exc:
                    raise tool_error(ErrorCode.EXECUTION_FAILED, f"fetch_url: {exc}") from None
        return FetchUrlResult(
            url=response.url,
            status_code=response.status_code,
            content_type=kind,
            title=title,
            text=text,
            truncated=truncated,
        )

    async def _get(
        self, url: str, beat: Heartbeat, progress: ProgressPublisher | None = None
    ) -> GuardedResponse:
        headers = {"User-Agent": self.settings.user_agent, "Accept": ACCEPT}
        try:
            return await self._guard.request(
                "GET",
                url,
                limits=self._limits,
                headers=headers,
                on_progress=received(beat, progress),
            )
        except URLRefused as exc:
            # The model wrote the URL: a refused address, port or scheme, and a host name the
            # resolver says does not exist, are its to change.
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS, f"fetch_url: {exc.reason}", fixable_args=["url"]
            ) from None
        except NetworkUnavailable as exc:
            # An outage says nothing about the URL: the same call may succeed later.
            raise tool_error(
                ErrorCode.NETWORK_UNAVAILABLE,
                f"fetch_url: {exc.reason}; nothing was received, try again later",
                retryable=True,
            ) from None
        except TooManyRedirects as exc:
            raise tool_error(ErrorCode.EXECUTION_FAILED, f"fetch_url: {exc.reason}") from None
        except TooLarge as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"fetch_url: response too large: {exc.reason}"
            ) from None
        except NetworkTimeout as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"fetch_url: {exc.reason}", retryable=True
            ) from None
        except TransportFailed as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"fetch_url: {exc.reason}", retryable=exc.transient
            ) from None

    def _status_error(self, response: GuardedResponse) -> Exception:
        status = response.status_code
        transient = status in TRANSIENT_STATUSES
        return tool_error(
            ErrorCode.EXECUTION_FAILED,
            f"fetch_url: {response.url} answered http {status}",
            retryable=transient,
            output={"url": response.url, "status_code": status},
            next_retry_delay=_retry_after(response.headers.get("retry-after"))
            if transient
            else None,
        )
