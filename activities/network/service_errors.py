"""The failures of a service request and the one place they become tool errors.

    ServiceError            a request failed for a reason other than the network
    ├── CredentialError     the credential is not where the deployment said; nothing was sent
    ├── ServiceStatusError  the service answered a status the caller did not accept
    ├── ServiceAnswerError  a 2xx answer that cannot be read
    └── LinkRefused         a continuation link leaves the first request's collection

Network failures are the guard's (``toolcalls.activities.network.failures``).
:func:`service_failure` charges either kind to whoever can act on it, as
``toolcalls.activities.network.service`` describes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import httpx
from temporalio.exceptions import ApplicationError

from toolcalls.activities.errors import tool_error
from toolcalls.activities.network.failures import (
    NetworkError,
    NetworkTimeout,
    NetworkUnavailable,
    NoSuchHost,
    TooLarge,
    TransportFailed,
    URLRefused,
    nothing_sent,
)
from toolcalls.activities.network.guard import retry_after
from toolcalls.workflows.models.call import ErrorCode

MAX_RETRY_AFTER = timedelta(minutes=5)
"""A rate limit asking for a longer wait is reported, not turned into a retry delay."""


class ServiceError(Exception):
    """A service request failed for a reason other than the network; ``reason`` is short and
    lowercase, and holds no remote text and no secret."""

    status_code: int | None = None

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CredentialError(ServiceError):
    """The credential is not where the deployment said, or is not usable; nothing was sent."""


class ServiceStatusError(ServiceError):
    """The service answered with a status the caller did not accept (redirects included)."""

    def __init__(self, status_code: int, headers: httpx.Headers, rate_limited: bool) -> None:
        super().__init__(f"answered http {status_code}")
        self.status_code = status_code
        self.retry_after = retry_after(headers.get("retry-after"))
        self.rate_limited = rate_limited
        """429, or a 403 the service marks as a rate limit."""


class ServiceAnswerError(ServiceError):
    """The service answered a 2xx that cannot be read (not JSON, not the documented shape)."""

    def __init__(self, reason: str, status_code: int | None = None) -> None:
        super().__init__(reason)
        self.status_code = status_code


class LinkRefused(ServiceError):
    """A continuation link points outside the first request's host and collection."""


def service_failure(
    tool: str,
    service: str,
    exc: ServiceError | NetworkError,
    *,
    write: bool,
    not_found: str = "",
    fixed_host: bool = True,
    output: Mapping[str, Any] | None = None,
) -> ApplicationError:
    """The tool error for a failed service request, charged to whoever can act on it.

    ``write``: the request would change something; once it may have reached the service, the
    result is ``uncertain`` and never retried. ``not_found``: what a 404 means here (which
    setting to check). ``fixed_host``: the host is the code's (a name that does not resolve is
    the resolver's failure), not the deployment's. ``output`` is added to the error's output,
    with the ``status_code`` of an answer.
    """
    where = f"{tool}: {service}"
    details: dict[str, Any] = dict(output or {})
    status = exc.status_code
    if status is not None:
        details["status_code"] = status

    def error(code: ErrorCode, message: str, **options: Any) -> ApplicationError:
        return tool_error(code, f"{where} {message}", output=details or None, **options)

    if isinstance(exc, CredentialError):
        return error(ErrorCode.CONFIGURATION_ERROR, f"credential: {exc.reason}")
    if isinstance(exc, ServiceStatusError):
        return _status_failure(exc, error, write=write, not_found=not_found)
    if isinstance(exc, ServiceError):  # an unreadable 2xx answer, a refused link
        if write and status is not None:
            return error(
                ErrorCode.UNCERTAIN,
                f"answered {status} but {exc.reason}: the change was probably applied; check "
                "before calling again",
            )
        return error(ErrorCode.EXECUTION_FAILED, exc.reason)
    return _network_failure(exc, error, write=write, fixed_host=fixed_host)


def _status_failure(
    exc: ServiceStatusError,
    error: Callable[..., ApplicationError],
    *,
    write: bool,
    not_found: str,
) -> ApplicationError:
    status = exc.status_code
    assert status is not None
    if exc.rate_limited:
        delay = exc.retry_after
        wait = f"; retry after {delay.total_seconds():g} s" if delay is not None else ""
        retry = not write and (delay is None or delay <= MAX_RETRY_AFTER)
        # A rate-limited request was not carried out: a write may be sent again later.
        return error(
            ErrorCode.EXECUTION_FAILED,
            f"answered {status} (rate limited){wait}" + ("; nothing was changed" if write else ""),
            retryable=retry,
            next_retry_delay=delay if retry else None,
        )
    if status == 401:
        return error(
            ErrorCode.CONFIGURATION_ERROR,
            "answered 401: the access token is missing, expired or revoked",
        )
    if status == 403:
        return error(
            ErrorCode.CONFIGURATION_ERROR,
            "answered 403: the credential may not do this (a missing scope or permission)",
        )
    if status == 404:
        hint = f" ({not_found})" if not_found else ""
        code = ErrorCode.CONFIGURATION_ERROR if not_found else ErrorCode.EXECUTION_FAILED
        return error(code, f"answered 404: not found{hint}")
    if status in (409, 412):
        return error(ErrorCode.PRECONDITION_FAILED, f"answered {status}: conflict")
    if 300 <= status < 400:
        return error(ErrorCode.EXECUTION_FAILED, f"answered {status}: redirects are not followed")
    if status >= 500:
        if write:
            return error(
                ErrorCode.UNCERTAIN,
                f"answered {status} (service error): the change may have been applied; check "
                "before calling again",
            )
        return error(
            ErrorCode.EXECUTION_FAILED, f"answered {status} (service error)", retryable=True
        )
    return error(ErrorCode.EXECUTION_FAILED, f"answered {status}")


def _network_failure(
    exc: NetworkError,
    error: Callable[..., ApplicationError],
    *,
    write: bool,
    fixed_host: bool,
) -> ApplicationError:
    reason = exc.reason
    if isinstance(exc, TooLarge):
        if write and exc.status_code is not None and 200 <= exc.status_code < 300:
            return error(
                ErrorCode.UNCERTAIN,
                f"answered {exc.status_code} with {reason}: the change was probably applied",
            )
        return error(ErrorCode.OUTPUT_TOO_LARGE, f"answer too large: {reason}; ask for less")
    if isinstance(exc, URLRefused) and not (fixed_host and isinstance(exc, NoSuchHost)):
        # The code or the deployment wrote the URL: the deployment has to act.
        return error(ErrorCode.CONFIGURATION_ERROR, f"refused by the network guard: {reason}")
    if write and not nothing_sent(exc):
        return error(
            ErrorCode.UNCERTAIN,
            f"failed after the request may have been sent ({reason}): the change may have been "
            "applied; check before calling again",
        )
    if isinstance(exc, NetworkUnavailable | NoSuchHost):
        # A fixed service name that does not resolve can only be the worker's resolver failing.
        return error(ErrorCode.NETWORK_UNAVAILABLE, reason, retryable=True)
    if isinstance(exc, NetworkTimeout):
        return error(ErrorCode.TIMED_OUT, reason, retryable=not write)
    transient = not isinstance(exc, TransportFailed) or exc.transient
    return error(ErrorCode.EXECUTION_FAILED, reason, retryable=transient and not write)
