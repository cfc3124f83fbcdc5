"""The pinned connection: an httpx transport that connects only to addresses already admitted.

Built on httpcore's public pool and network-backend seam (``AsyncConnectionPool(
network_backend=...)``), no httpx internals: the backend connects to the checked addresses in
order instead of resolving the name again, while TLS still verifies the original host name (SNI
and certificate). It raises the guard's own failures for what it alone can tell apart: a
connection that could not be made (``NetworkUnavailable``) and a TLS handshake that failed
(the certificate's fault, or the peer's).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import httpcore
import httpx

from toolcalls.activities.network.addresses import Address
from toolcalls.activities.network.failures import (
    NetworkTimeout,
    NetworkUnavailable,
    TransportFailed,
    handshake_failure,
    unreachable,
)

__all__ = ["PinnedTransport"]


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
        where = self._backend.where
        try:
            tls = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        except httpcore.ConnectTimeout as error:
            # The peer took the connection and never finished the handshake: a slow server.
            raise NetworkTimeout(f"tls handshake with {where} timed out") from error
        except (httpcore.ConnectError, OSError) as error:
            raise handshake_failure(where, error) from error
        return _WatchedStream(tls, self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects to checked addresses only; the host name stays with TLS (SNI, certificate)."""

    def __init__(self, host: str, addresses: Sequence[Address]) -> None:
        self._host = host
        self._addresses = addresses
        self._inner = httpcore.AnyIOBackend()
        self.where = host
        """``host:port`` once a connection is asked for; the host until then."""
        self.connected = False
        """Whether a TCP connection was made (the destination was reached)."""
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
            raise TransportFailed(f"connection to unchecked host {host} refused", transient=False)
        self.where = f"{self._host}:{port}"
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
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
                continue
            self.connected = True
            return _WatchedStream(stream, self)
        if isinstance(failure, httpcore.ConnectTimeout):
            raise NetworkUnavailable(f"could not reach {self.where} (connection timed out)")
        raise unreachable(self.where, failure) from failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise TransportFailed("unix sockets are refused", transient=False)

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

    One per hop; closing it closes the connection.
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
    def connected(self) -> bool:
        """Whether a TCP connection was made."""
        return self._backend.connected

    @property
    def where(self) -> str:
        """The ``host:port`` connected to (or tried)."""
        return self._backend.where

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
