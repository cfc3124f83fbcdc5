"""Every failure of the guarded network path, and the one place library errors become them.

Whose fault a failure is decides its class, so each tool can say who should act::

    NetworkError
    ├── URLRefused          the URL, a resolved address, or a redirect target is refused: the
    │   │                   author of the URL (or the policy) has to change something
    │   └── NoSuchHost      the resolver answered that the name has no address
    ├── NetworkUnavailable  the destination could not be reached for now: the resolver did not
    │                       answer (or ran out of time), the connection was refused, reset or
    │                       timed out, the network or host is unreachable, the peer broke off the
    │                       TLS handshake; a later attempt may succeed, the URL may be fine
    ├── NetworkTimeout      connected, but no complete response within the hop's deadline
    ├── TooLarge            a byte ceiling (wire or decoded) was reached
    ├── TransportFailed     a certificate that does not verify, a protocol or decoding failure
    │                       (``transient`` says if a retry could help)
    └── TooManyRedirects    more redirects than ``Limits.max_redirects``
"""

from __future__ import annotations

import contextlib
import errno
import socket
import ssl
from collections.abc import Iterator

import httpcore
import httpx

_NO_SUCH_NAME = frozenset(
    code
    for code in (
        socket.EAI_NONAME,
        getattr(socket, "EAI_NODATA", None),
        getattr(socket, "EAI_ADDRFAMILY", None),
    )
    if code is not None
)
"""Resolver answers that say the name has no address: every other lookup failure is an outage."""
_UNREACHABLE = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ECONNABORTED: "connection aborted",
    errno.EPIPE: "connection closed",
    errno.ENETUNREACH: "network unreachable",
    errno.ENETDOWN: "network down",
    errno.EHOSTUNREACH: "host unreachable",
    errno.EHOSTDOWN: "host down",
    errno.ETIMEDOUT: "connection timed out",
}
"""Socket errors that mean the peer could not be reached (or dropped us), with their wording."""


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


class NoSuchHost(URLRefused):
    """The resolver answered that the host name has no address (NXDOMAIN, no A/AAAA record)."""


class NetworkUnavailable(NetworkError):
    """The destination could not be reached for now; trying again later may succeed."""


class TooLarge(NetworkError):
    """A byte ceiling was reached."""


class NetworkTimeout(NetworkError):
    """Connected, but the request ran out of time."""


class TransportFailed(NetworkError):
    """TLS certificate, protocol or decoding failure."""

    def __init__(self, reason: str, *, transient: bool = True) -> None:
        super().__init__(reason)
        self.transient = transient
        """False when a retry cannot help (a certificate that does not verify, a bad encoding)."""


class TooManyRedirects(NetworkError):
    """More redirects than the limits allow."""


def nothing_sent(exc: NetworkError) -> bool:
    """Whether the failure happened before a byte of the request could leave (a failed lookup
    or connection, a deadline that ran out before the request was written)."""
    if exc.request_sent is not None:
        return not exc.request_sent
    cause = exc.__cause__
    return isinstance(
        cause,
        httpcore.ConnectError | httpcore.ConnectTimeout | httpx.ConnectError | httpx.ConnectTimeout,
    )


def lookup_failure(host: str, error: socket.gaierror) -> NetworkError:
    """A failed ``getaddrinfo`` as the guard reports it: no such name, or an outage."""
    if error.errno in _NO_SUCH_NAME:
        return NoSuchHost(f"url: host {host} does not resolve (no such name)")
    if error.errno == socket.EAI_AGAIN:
        detail = "the resolver did not answer"
    elif error.errno == socket.EAI_FAIL:
        detail = "the resolver failed"
    else:
        detail = f"resolver error {error.errno}"
    return NetworkUnavailable(f"lookup of {host} failed for now ({detail})")


def unreachable(where: str, error: BaseException) -> NetworkUnavailable:
    """The peer at ``where`` (host:port) could not be reached, worded from the cause chain."""
    return NetworkUnavailable(f"could not reach {where} ({_detail(error, 'connection failed')})")


def handshake_failure(where: str, error: BaseException) -> NetworkError:
    """A TLS handshake that failed: the certificate's fault, or the peer broke it off."""
    if certificate_failure(error):
        return TransportFailed("tls certificate verification failed", transient=False)
    return NetworkUnavailable(
        f"tls handshake with {where} failed ({_detail(error, 'broken off by the peer')})"
    )


def certificate_failure(error: BaseException) -> bool:
    """Whether a certificate that did not verify is somewhere in ``error``'s cause chain."""
    return any(
        isinstance(seen, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(seen)
        for seen in _chain(error)
    )


@contextlib.contextmanager
def mapped_errors(where: str) -> Iterator[None]:
    """httpcore/httpx/OS failures of one exchange with ``where`` -> ``NetworkError``, in one place.

    The pinned connection raises ``NetworkUnavailable`` itself when it cannot connect; what is
    left here are failures of transports that do not (an injected one) and of a connection that
    was made: broken off (unavailable) or answered with something unreadable (transport).
    """
    try:
        yield
    except NetworkError:
        raise
    except (httpcore.ConnectTimeout, httpx.ConnectTimeout) as error:
        raise NetworkUnavailable(f"could not reach {where} (connection timed out)") from error
    except (httpcore.TimeoutException, httpx.TimeoutException) as error:
        raise NetworkTimeout("timed out") from error
    except (httpcore.ConnectError, httpx.ConnectError) as error:
        if certificate_failure(error):
            raise TransportFailed("tls certificate verification failed", transient=False) from error
        raise unreachable(where, error) from error
    except (httpcore.ReadError, httpcore.WriteError, httpx.ReadError, httpx.WriteError) as error:
        raise NetworkUnavailable(
            f"connection to {where} broke off ({_detail(error, 'connection lost')})"
        ) from error
    except (
        httpcore.NetworkError,
        httpcore.ProtocolError,
        httpcore.UnsupportedProtocol,
        httpx.TransportError,
        httpx.DecodingError,
        ssl.SSLError,
        OSError,
    ) as error:
        if certificate_failure(error):
            raise TransportFailed("tls certificate verification failed", transient=False) from error
        if _os_error(error) is not None:
            raise NetworkUnavailable(
                f"connection to {where} broke off ({_detail(error, 'connection lost')})"
            ) from error
        raise TransportFailed("connection or protocol failure") from error


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = error
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _os_error(error: BaseException) -> str | None:
    for seen in _chain(error):
        if isinstance(seen, OSError) and seen.errno in _UNREACHABLE:
            return _UNREACHABLE[seen.errno]
    return None


def _detail(error: BaseException, default: str) -> str:
    found = _os_error(error)
    if found is not None:
        return found
    for seen in _chain(error):
        if isinstance(seen, ssl.SSLError) and seen.reason:
            return f"tls: {seen.reason.lower().replace('_', ' ')}"
    return default
