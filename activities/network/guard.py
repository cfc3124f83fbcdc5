"""The one guarded network path every outbound HTTP request of the worker takes.

What it can touch: any TCP destination the admission rule admits, on the allowed ports. How it
is confined:

- the URL is checked before anything else (scheme allowlist, no userinfo, no control characters
  or whitespace, no backslash, a host, an IDNA-encodable name, a port from the allowlist);
- the host is resolved once per hop and *every* address it resolves to must be admitted (the
  default rule, :func:`public_only`, refuses everything that is not plainly public, including
  IPv4 embedded in IPv6);
- the connection goes to an address that was checked (``toolcalls.activities.network.pinning``): it
  connects there instead of resolving the name again, while TLS still verifies the original host
  name (SNI and certificate), so DNS rebinding between the check and the connect has nothing to
  rebind;
- redirects are followed by this module, hop by hop, each one validated like the first URL;
  ``https`` to ``http`` is refused; once a redirect leaves the first origin only the headers in
  :data:`CROSS_ORIGIN_HEADERS` travel on, so no credential of any name reaches another origin;
- wire bytes, decoded bytes and time are bounded while streaming, never after buffering;
- nothing is read from the environment: no proxies, no ``.netrc``, no SSL variables.

Every failure is a :class:`NetworkError` with a short lowercase ``reason``; its subclasses say
whose fault it is (``toolcalls.activities.network.failures`` draws the hierarchy).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

import httpx

from toolcalls.activities.network.addresses import (
    Address,
    Admission,
    any_address,
    embedded_ipv4,
    public_only,
)
from toolcalls.activities.network.decoding import Decoder
from toolcalls.activities.network.failures import (
    NetworkError,
    NetworkTimeout,
    NetworkUnavailable,
    NoSuchHost,
    TooLarge,
    TooManyRedirects,
    TransportFailed,
    URLRefused,
    lookup_failure,
    mapped_errors,
)
from toolcalls.activities.network.pinning import PinnedTransport
from toolcalls.activities.network.urls import MAX_URL_CHARS, Target, lower, parse_url, target_of

__all__ = [
    "CROSS_ORIGIN_HEADERS",
    "DENIED_HOST_NAMES",
    "MAX_URL_CHARS",
    "Address",
    "Admission",
    "GuardedResponse",
    "Limits",
    "NetworkError",
    "NetworkGuard",
    "NetworkTimeout",
    "NetworkUnavailable",
    "NoSuchHost",
    "PinnedTransport",
    "Resolver",
    "TooLarge",
    "TooManyRedirects",
    "TransportFailed",
    "URLRefused",
    "any_address",
    "embedded_ipv4",
    "parse_url",
    "public_only",
    "retry_after",
    "system_resolver",
]

Resolver = Callable[[str, int], Awaitable[Sequence[Address]]]
"""(host, port) -> every address the name resolves to. Default: the system resolver, off-loop.
A resolver may raise ``socket.gaierror`` (classified as the system resolver's are) or a
``NetworkError`` of its own."""

DNS_TIMEOUT_SECONDS = 10.0
"""A lookup's own bound: the spec keeps DNS outside the transport deadline, but not unbounded."""
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CROSS_ORIGIN_HEADERS = frozenset({"accept", "accept-language", "user-agent", "content-type"})
"""The only caller headers that follow a redirect to another origin (scheme, host or port): what
content is wanted and who asks, and the type of a body that travels on (307, 308). Everything
else, credentials of any name included, stays with the origin it was meant for. The guard sets
``Accept-Encoding`` itself on every hop; ``Host`` and ``Content-Length`` follow the new request."""
BODY_HEADERS = frozenset({"content-type"})
"""Headers about the request body, dropped with it when a redirect turns the request into a GET."""
DENIED_HOST_NAMES = frozenset(
    {"localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data"}
)
"""Refused by name under the default rule, before any lookup (cloud metadata, local names)."""
ACCEPT_ENCODING = "gzip, deflate"
"""The only content codings this module decodes, so the only ones it asks for."""


@dataclass(frozen=True)
class Limits:
    """Ceilings for one request."""

    timeout_seconds: float
    """Per request (per hop), connect to last byte; DNS has its own bound."""
    max_bytes: int
    """Body bytes on the wire (compressed), per hop."""
    max_decoded_bytes: int
    """Body bytes after content decoding."""
    max_redirects: int = 0
    """0: a redirect response is returned as is, not followed."""


@dataclass(frozen=True)
class GuardedResponse:
    """A response read within the limits."""

    url: str
    """The final URL (after redirects)."""
    status_code: int
    headers: httpx.Headers
    body: bytes
    """Content-decoded, at most ``max_decoded_bytes``."""
    redirects: tuple[str, ...]
    """The URLs redirected to, in order (the last one is ``url``)."""


def retry_after(value: str | None, now: datetime | None = None) -> timedelta | None:
    """``Retry-After`` (delay-seconds or an HTTP date) as a delay; ``None`` if absent or bad."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        # Ten significant digits are over 300 years already; more would only make int() slow.
        return timedelta(seconds=int(value.lstrip("0")[:10] or "0"))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(when - (now or datetime.now(UTC)), timedelta(0))


async def system_resolver(host: str, port: int) -> Sequence[Address]:
    """Every address the operating system's resolver gives for ``host``, looked up off the loop."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise lookup_failure(host, error) from error
    except UnicodeError as error:  # the idna codec: an empty label, or one over 63 characters
        raise URLRefused(f"url: host {host} is not a valid host name") from error
    addresses: list[Address] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]))
        if address not in addresses:
            addresses.append(address)
    return addresses


def cross_origin(headers: Mapping[str, str], secrets: Collection[str]) -> dict[str, str]:
    """The headers that may follow a redirect to another origin: the allowlist, minus secrets."""
    return {
        name: value
        for name, value in headers.items()
        if name.lower() in CROSS_ORIGIN_HEADERS and name.lower() not in secrets
    }


class NetworkGuard:
    """Validates, resolves, admits, pins, and reads within ceilings; see the module docstring."""

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        admit: Admission = public_only,
        allowed_ports: Collection[int] | None = (80, 443),
        verify: ssl.SSLContext | bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
        denied_host_names: Collection[str] | None = None,
    ) -> None:
        """Build a guard.

        Args:
            resolver: Name lookup; the system resolver when None.
            admit: The rule every resolved address must pass.
            allowed_ports: Ports a URL may name; None allows any port (configured destinations).
            verify: TLS verification: True (system/certifi roots), an SSLContext, or False.
            transport: Tests only (httpx.MockTransport for remote providers); URL checks,
                resolution and admission still run, and it answers instead of a pinned connection.
            denied_host_names: Names refused before lookup; by default ``DENIED_HOST_NAMES``
                under :func:`public_only` and none under any other rule.
        """
        self._resolver = resolver or system_resolver
        self._admit = admit
        self._allowed_ports = None if allowed_ports is None else frozenset(allowed_ports)
        self._ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        self._transport = transport
        if denied_host_names is None:
            denied_host_names = DENIED_HOST_NAMES if admit is public_only else ()
        self._denied_names = lower(denied_host_names)

    def _target(self, url: str, schemes: frozenset[str]) -> Target:
        return target_of(url, schemes, self._allowed_ports)

    async def _addresses(self, target: Target) -> Sequence[Address]:
        literal: Address | None
        try:
            literal = ipaddress.ip_address(target.host)
        except ValueError:
            literal = None
        if literal is not None:
            addresses: Sequence[Address] = (literal,)
        else:
            name = target.host.rstrip(".")
            if name in self._denied_names or name.endswith(".localhost"):
                raise URLRefused(f"url: host {name} is refused")
            try:
                async with asyncio.timeout(DNS_TIMEOUT_SECONDS):
                    addresses = await self._resolver(name, target.port)
            except TimeoutError as error:  # the resolver did not answer: an outage, not the URL
                raise NetworkUnavailable(f"dns lookup of {name} timed out") from error
            except socket.gaierror as error:
                raise lookup_failure(name, error) from error
            if not addresses:
                raise NoSuchHost(f"url: host {name} does not resolve")
        for address in addresses:
            reason = self._admit(address)
            if reason is not None and literal is not None:
                raise URLRefused(f"url: {address} is {_article(reason)} {reason} address")
            if reason is not None:
                raise URLRefused(f"url: host {target.host} resolves to {reason} address {address}")
        return addresses

    async def request(
        self,
        method: str,
        url: str,
        *,
        limits: Limits,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        secret_headers: Collection[str] = (),
        schemes: Collection[str] = ("http", "https"),
        on_progress: Callable[[int], None] | None = None,
    ) -> GuardedResponse:
        """Send one request through the guard, following at most ``limits.max_redirects``.

        ``secret_headers`` never leave the first origin, not even under a name the cross-origin
        allowlist admits (a deployment's token in ``User-Agent``, say).
        """
        allowed_schemes = lower(schemes)
        secrets = lower(secret_headers)
        target = self._target(url, allowed_schemes)
        origin = target.origin
        send_headers = dict(headers or {})
        redirects: list[str] = []
        while True:
            try:
                addresses = await self._addresses(target)
            except NetworkError as error:
                error.request_sent = bool(redirects)  # an earlier hop's request was sent
                if not redirects or not isinstance(error, URLRefused):
                    raise
                raise _redirect_refused(error) from error
            try:
                status, response_headers, body = await self._hop(
                    method, target, addresses, send_headers, content, limits, on_progress
                )
            except NetworkError as error:
                if redirects:
                    error.request_sent = True  # an earlier hop's request was sent
                raise
            location = response_headers.get("location")
            if status not in REDIRECT_STATUSES or location is None or limits.max_redirects == 0:
                return GuardedResponse(
                    url=str(target.url),
                    status_code=status,
                    headers=response_headers,
                    body=body,
                    redirects=tuple(redirects),
                )
            if len(redirects) >= limits.max_redirects:
                raise TooManyRedirects(f"more than {limits.max_redirects} redirects")
            try:
                next_url = str(target.url.join(location))
            except (httpx.InvalidURL, UnicodeError, ValueError) as error:
                raise URLRefused("url: redirect location is not a valid url") from error
            try:
                next_target = self._target(next_url, allowed_schemes)
            except URLRefused as error:
                raise _redirect_refused(error) from error
            if target.scheme == "https" and next_target.scheme == "http":
                raise URLRefused("url: redirect from https to http refused")
            # Compared with the first origin: once a chain has left it, only the allowlist
            # travels on, even back to where it started.
            if next_target.origin != origin:
                send_headers = cross_origin(send_headers, secrets)
            if status == 303 or (status in (301, 302) and method.upper() == "POST"):
                if method.upper() != "HEAD":
                    method = "GET"
                content = None
                send_headers = {
                    k: v for k, v in send_headers.items() if k.lower() not in BODY_HEADERS
                }
            redirects.append(next_url)
            target = next_target

    async def _hop(
        self,
        method: str,
        target: Target,
        addresses: Sequence[Address],
        headers: Mapping[str, str],
        content: bytes | None,
        limits: Limits,
        on_progress: Callable[[int], None] | None,
    ) -> tuple[int, httpx.Headers, bytes]:
        timeout = limits.timeout_seconds
        request = httpx.Request(
            method,
            target.url,
            headers={**headers, "Accept-Encoding": ACCEPT_ENCODING},
            content=content,
            extensions={
                "timeout": {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
            },
        )
        transport = self._transport or PinnedTransport(target.host, addresses, self._ssl_context)
        where = f"{target.host}:{target.port}"
        try:
            try:
                async with asyncio.timeout(timeout):
                    with mapped_errors(where):
                        return await self._exchange(transport, request, limits, on_progress)
            except TimeoutError as error:
                if isinstance(transport, PinnedTransport) and not transport.connected:
                    raise NetworkUnavailable(
                        f"could not reach {where} (no connection within {timeout:g} s)"
                    ) from error
                raise NetworkTimeout(f"no complete response within {timeout:g} s") from error
        except NetworkError as error:
            if isinstance(transport, PinnedTransport):
                error.request_sent = transport.request_sent
            raise
        finally:
            if self._transport is None:
                with contextlib.suppress(Exception):
                    await transport.aclose()

    async def _exchange(
        self,
        transport: httpx.AsyncBaseTransport,
        request: httpx.Request,
        limits: Limits,
        on_progress: Callable[[int], None] | None,
    ) -> tuple[int, httpx.Headers, bytes]:
        response = await transport.handle_async_request(request)
        try:
            status = response.status_code
            redirect = status in REDIRECT_STATUSES and "location" in response.headers
            if redirect and limits.max_redirects > 0:
                return status, response.headers, b""
            decoder = Decoder(
                response.headers.get("content-encoding", ""), limits.max_decoded_bytes
            )
            wire = 0
            parts: list[bytes] = []
            stream = response.stream
            assert isinstance(stream, httpx.AsyncByteStream)
            # The stream itself, not aiter_raw: a MockTransport response has already been read
            # (and decoded) by httpx, but its stream still yields the bytes as sent.
            try:
                async for chunk in stream:
                    wire += len(chunk)
                    if wire > limits.max_bytes:
                        raise TooLarge(f"body exceeds {limits.max_bytes} bytes")
                    parts.append(decoder.decode(chunk))
                    if on_progress is not None:
                        on_progress(wire)
                parts.append(decoder.flush())
            except NetworkError as error:
                error.status_code = status
                raise
            return status, response.headers, b"".join(parts)
        finally:
            await response.aclose()


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _redirect_refused(error: URLRefused) -> URLRefused:
    refused = type(error)(f"url: redirect refused: {error.reason.removeprefix('url: ')}")
    refused.request_sent = True  # the hop that redirected was sent
    return refused
