"""The one guarded network path every outbound HTTP request of the worker takes.

What it can touch: any TCP destination the admission rule admits, on the allowed ports. How it
is confined:

- the URL is checked before anything else (scheme allowlist, no userinfo, no control characters
  or whitespace, no backslash, a host, an IDNA-encodable name, a port from the allowlist);
- the host is resolved once per hop and *every* address it resolves to must be admitted (the
  default rule, :func:`public_only`, refuses everything that is not plainly public, including
  IPv4 embedded in IPv6);
- the connection goes to an address that was checked: an httpcore network backend connects to it
  instead of resolving the name again, while TLS still verifies the original host name (SNI and
  certificate), so DNS rebinding between the check and the connect has nothing to rebind;
- redirects are followed by this module, hop by hop, each one validated like the first URL;
  ``https`` to ``http`` is refused; credentials and secret headers never go to another origin;
- wire bytes, decoded bytes and time are bounded while streaming, never after buffering;
- nothing is read from the environment: no proxies, no ``.netrc``, no SSL variables.

Exceptions: every failure is a :class:`NetworkError` with a short lowercase ``reason``::

    NetworkError
    ├── URLRefused         the URL, a resolved address, or a redirect target is refused
    ├── TooLarge           a byte ceiling (wire or decoded) was reached
    ├── NetworkTimeout     the per-hop deadline or a DNS lookup ran out
    ├── TransportFailed    connection, TLS or protocol failure (``transient`` says if a retry
    │                      could help)
    └── TooManyRedirects   more redirects than ``Limits.max_redirects``
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
import zlib
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpcore
import httpx

from activities.network.addresses import (
    Address,
    Admission,
    any_address,
    embedded_ipv4,
    public_only,
)

__all__ = [
    "DENIED_HOST_NAMES",
    "MAX_URL_CHARS",
    "Address",
    "Admission",
    "GuardedResponse",
    "Limits",
    "NetworkError",
    "NetworkGuard",
    "NetworkTimeout",
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
"""(host, port) -> every address the name resolves to. Default: the system resolver, off-loop."""

MAX_URL_CHARS = 2_048
"""The longest URL accepted, on every hop (the spec's fetch_url bound)."""
DNS_TIMEOUT_SECONDS = 10.0
"""A lookup's own bound: the spec keeps DNS outside the transport deadline, but not unbounded."""
DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ALWAYS_SECRET_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
"""Dropped whenever a redirect changes origin, whatever the caller says."""
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


class NetworkError(Exception):
    """reason: a short lowercase message naming the problem."""

    request_sent: bool | None = None
    """Whether a byte of the request may have reached a server: False when certainly not (the
    lookup or the connection failed, or the deadline ran out before the request was written),
    True when it may have, None when the guard cannot tell (an injected transport)."""
    status_code: int | None = None
    """The status of the response the failure interrupted (its body), if one had arrived."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class URLRefused(NetworkError):
    """The URL, one of its host's addresses, or a redirect target is refused."""

    field = "url"


class TooLarge(NetworkError):
    """A byte ceiling was reached."""


class NetworkTimeout(NetworkError):
    """The request ran out of time."""


class TransportFailed(NetworkError):
    """Connection, TLS or protocol failure."""

    def __init__(self, reason: str, *, transient: bool = True) -> None:
        super().__init__(reason)
        self.transient = transient
        """False when a retry cannot help (a certificate that does not verify, a bad encoding)."""


class TooManyRedirects(NetworkError):
    """More redirects than the limits allow."""


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


@dataclass(frozen=True)
class _Target:
    url: httpx.URL
    scheme: str
    host: str
    port: int

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


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
        if error.errno == socket.EAI_AGAIN:  # the resolver did not answer: worth another try
            raise TransportFailed(f"lookup of {host} failed for now; try again") from error
        raise URLRefused(f"url: host {host} does not resolve") from error
    except UnicodeError as error:  # the idna codec: an empty label, or one over 63 characters
        raise URLRefused(f"url: host {host} is not a valid host name") from error
    addresses: list[Address] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]))
        if address not in addresses:
            addresses.append(address)
    return addresses


class _WatchedStream(httpcore.AsyncNetworkStream):
    """A connection that notes when the request starts to be written (TLS handshakes aside)."""

    def __init__(self, inner: httpcore.AsyncNetworkStream, backend: _PinnedBackend) -> None:
        self._inner = inner
        self._backend = backend

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._backend.request_sent = True
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        tls = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return _WatchedStream(tls, self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects to checked addresses only; the host name stays with TLS (SNI, certificate)."""

    def __init__(self, host: str, addresses: Sequence[Address]) -> None:
        self._host = host
        self._addresses = addresses
        self._inner = httpcore.AnyIOBackend()
        self.request_sent = False
        """Whether a byte of the request has been written to a connection."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if host.strip("[]").lower() != self._host:
            raise httpcore.ConnectError(f"connection to unchecked host {host} refused")
        failure: Exception = httpcore.ConnectError("no admitted address")
        for address in self._addresses:
            try:
                stream = await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
                return _WatchedStream(stream, self)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are refused")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _CoreStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose only connection goes to the given, already admitted, addresses.

    Built on httpcore's public pool and network-backend seam (``AsyncConnectionPool(
    network_backend=...)``); no httpx internals. One per hop; closing it closes the connection.
    """

    def __init__(self, host: str, addresses: Sequence[Address], ssl_context: ssl.SSLContext):
        self._backend = _PinnedBackend(host, addresses)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=1,
            http1=True,
            http2=False,
            retries=0,
            network_backend=self._backend,
        )

    @property
    def request_sent(self) -> bool:
        """Whether a byte of the request has been written to the connection."""
        return self._backend.request_sent

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = await self._pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_CoreStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class _Decoder:
    """Content decoding that never produces more than the budget, whatever the ratio."""

    def __init__(self, encoding: str, budget: int) -> None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise TransportFailed(f"unsupported content-encoding {encoding!r}", transient=False)
        self._coding = codings[0] if codings else None
        self._budget = budget
        self._produced = 0
        self._raw_deflate_tried = False
        self._zlib = self._new()

    def _new(self, raw: bool = False) -> Any:
        if self._coding in ("gzip", "x-gzip"):
            return zlib.decompressobj(zlib.MAX_WBITS | 16)
        if self._coding == "deflate":
            return zlib.decompressobj(-zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
        return None

    def _take(self, out: bytes) -> bytes:
        self._produced += len(out)
        if self._produced > self._budget:
            raise TooLarge(f"decoded body exceeds {self._budget} bytes")
        return out

    def decode(self, data: bytes) -> bytes:
        if self._zlib is None:
            return self._take(data)
        parts: list[bytes] = []
        pending = data
        while pending and not self._zlib.eof:
            # max_length bounds each step: a bomb stops at budget + 1 bytes, never expands whole.
            room = self._budget - self._produced + 1
            try:
                out = self._zlib.decompress(pending, room)
            except zlib.error as error:
                if self._coding == "deflate" and not self._raw_deflate_tried:
                    # Servers send raw deflate under "deflate" often enough; retry once as raw.
                    self._raw_deflate_tried = True
                    self._zlib = self._new(raw=True)
                    continue
                raise TransportFailed("body does not decode", transient=False) from error
            self._raw_deflate_tried = True
            parts.append(self._take(out))
            pending = self._zlib.unconsumed_tail
        return b"".join(parts)

    def flush(self) -> bytes:
        if self._zlib is None or self._zlib.eof:
            return b""
        try:
            return self._take(self._zlib.flush(self._budget - self._produced + 1))
        except zlib.error as error:
            raise TransportFailed("body does not decode", transient=False) from error


def _lower(names: Iterable[str]) -> frozenset[str]:
    return frozenset(name.lower() for name in names)


def parse_url(
    url: str,
    *,
    schemes: Collection[str] = ("http", "https"),
    allowed_ports: Collection[int] | None = (80, 443),
) -> httpx.URL:
    """Validate a URL's text, with no lookup, and return it parsed. Raises ``URLRefused``.

    Pure: argument models use it to refuse a bad URL before a call is planned.
    """
    ports = None if allowed_ports is None else frozenset(allowed_ports)
    return _target(url, _lower(schemes), ports).url


def _target(url: str, schemes: frozenset[str], allowed_ports: frozenset[int] | None) -> _Target:
    if len(url) > MAX_URL_CHARS:
        raise URLRefused(f"url: longer than {MAX_URL_CHARS} characters")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise URLRefused("url: contains whitespace or control characters")
    if "\\" in url:
        raise URLRefused("url: contains a backslash")
    scheme, sep, rest = url.partition(":")
    if not sep or scheme.lower() not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise URLRefused(f"url: scheme must be one of {allowed}")
    if not rest.startswith("//"):
        raise URLRefused("url: host required")
    authority = rest[2:]
    for end in "/?#":
        authority = authority.split(end, 1)[0]
    if "@" in authority:
        raise URLRefused("url: credentials in urls are refused")
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError, ValueError) as error:
        raise URLRefused("url: not a valid url") from error
    if parsed.userinfo:
        raise URLRefused("url: credentials in urls are refused")
    if not host:
        raise URLRefused("url: host required")
    if "%" in host:
        raise URLRefused("url: zone ids are refused")
    lowered = parsed.scheme.lower()
    port = DEFAULT_PORTS[lowered] if parsed.port is None else parsed.port
    if not 0 < port < 65_536:
        raise URLRefused(f"url: port {port} is not a valid port")
    if allowed_ports is not None and port not in allowed_ports:
        ports = ", ".join(str(p) for p in sorted(allowed_ports))
        raise URLRefused(f"url: port {port} is not allowed (allowed: {ports})")
    return _Target(url=parsed, scheme=lowered, host=host, port=port)


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
        self._denied_names = _lower(denied_host_names)

    def _target(self, url: str, schemes: frozenset[str]) -> _Target:
        return _target(url, schemes, self._allowed_ports)

    async def _addresses(self, target: _Target) -> Sequence[Address]:
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
            except TimeoutError as error:
                raise NetworkTimeout(f"dns lookup of {name} timed out") from error
            if not addresses:
                raise URLRefused(f"url: host {name} does not resolve")
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
        """Send one request through the guard, following at most ``limits.max_redirects``."""
        allowed_schemes = _lower(schemes)
        secrets = _lower(secret_headers) | ALWAYS_SECRET_HEADERS
        target = self._target(url, allowed_schemes)
        origin = target.origin
        send_headers = dict(headers or {})
        redirects: list[str] = []
        while True:
            try:
                addresses = await self._addresses(target)
            except NetworkError as error:
                if not redirects:
                    error.request_sent = False
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
            if next_target.origin != origin:
                send_headers = {k: v for k, v in send_headers.items() if k.lower() not in secrets}
            if status == 303 or (status in (301, 302) and method.upper() == "POST"):
                if method.upper() != "HEAD":
                    method = "GET"
                content = None
            redirects.append(next_url)
            target = next_target

    async def _hop(
        self,
        method: str,
        target: _Target,
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
        try:
            try:
                async with asyncio.timeout(timeout):
                    with _mapped_errors():
                        return await self._exchange(transport, request, limits, on_progress)
            except TimeoutError as error:
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
            decoder = _Decoder(
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
    return URLRefused(f"url: redirect refused: {error.reason.removeprefix('url: ')}")


@contextlib.contextmanager
def _mapped_errors() -> Iterator[None]:
    """httpcore/httpx/OS failures -> NetworkError, in one place."""
    try:
        yield
    except NetworkError:
        raise
    except (httpcore.TimeoutException, httpx.TimeoutException) as error:
        raise NetworkTimeout("timed out") from error
    except (httpcore.ConnectError, httpx.ConnectError) as error:
        if _certificate_failure(error):
            raise TransportFailed("tls certificate verification failed", transient=False) from error
        raise TransportFailed("connection failed") from error
    except (
        httpcore.NetworkError,
        httpcore.ProtocolError,
        httpcore.UnsupportedProtocol,
        httpx.TransportError,
        httpx.DecodingError,
        ssl.SSLError,
        OSError,
    ) as error:
        if _certificate_failure(error):
            raise TransportFailed("tls certificate verification failed", transient=False) from error
        raise TransportFailed("connection or protocol failure") from error


def _certificate_failure(error: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        if "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
