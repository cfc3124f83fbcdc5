"""TLS for the mail servers a deployment configures, and their connection failures in one place.

Certificates and host names are verified always, against the system's trust store plus the
deployment's ``ca_file``; nothing here can turn that off. A failure is charged as the network
family charges it (docs/tools-network.md): a name that does not exist or a certificate that does
not verify is the deployment's to fix; a server that cannot be reached for now is nobody's.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolcalls.activities.email.backend import (
    MailBackendError,
    MailConfiguration,
    MailTimeout,
    MailUnavailable,
)
from toolcalls.activities.network.failures import (
    NoSuchHost,
    TransportFailed,
    _chain,
    certificate_failure,
    handshake_failure,
    lookup_failure,
    unreachable,
)

SOCKET_TIMEOUT_SECONDS = 15.0
"""``IMAPEmail(timeout_seconds=15)`` (spec): one socket operation; the operation's own deadline
(``email.timeout_seconds``) bounds the whole."""


def tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """Verifying TLS (TLS 1.2 or newer): the system's roots, and ``ca_file`` besides."""
    context = ssl.create_default_context()
    if ca_file is not None:
        try:
            context.load_verify_locations(cafile=str(ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise MailConfiguration(f"email.ca_file: {ca_file} cannot be loaded ({exc})") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def socket_timeout(timeout_seconds: float) -> float:
    return min(SOCKET_TIMEOUT_SECONDS, timeout_seconds)


@contextmanager
def connection_failures(host_key: str, host: str, port: int) -> Iterator[None]:
    """Connecting to ``host:port`` (named by the setting ``host_key``): its failures mapped."""
    where = f"{host}:{port}"
    try:
        yield
    except MailBackendError:
        raise
    except ssl.SSLError as exc:
        raise tls_failure(host_key, where, exc) from None
    except TimeoutError:
        raise MailUnavailable(f"could not reach {where} (connection timed out)") from None
    except OSError as exc:
        lookup = next((e for e in _chain(exc) if isinstance(e, socket.gaierror)), None)
        if lookup is not None:
            failure = lookup_failure(host, lookup)
            if isinstance(failure, NoSuchHost):
                raise MailConfiguration(
                    f"{host_key}: {host} does not resolve (no such name)"
                ) from None
            raise MailUnavailable(failure.reason) from None
        if certificate_failure(exc):
            raise tls_failure(host_key, where, exc) from None
        raise MailUnavailable(unreachable(where, exc).reason) from None


def tls_failure(host_key: str, where: str, exc: BaseException) -> MailBackendError:
    failure = handshake_failure(where, exc)
    if isinstance(failure, TransportFailed):
        return MailConfiguration(
            f"{host_key}: the tls certificate of {where} does not verify for that host name "
            "(email.ca_file adds a private CA)"
        )
    return MailUnavailable(failure.reason)


@contextmanager
def session_failures(where: str) -> Iterator[None]:
    """An established session that breaks off or stops answering."""
    try:
        yield
    except MailBackendError:
        raise
    except TimeoutError:
        raise MailTimeout(f"{where} did not answer in time") from None
    except (OSError, EOFError):
        raise MailUnavailable(f"the connection to {where} broke off") from None
