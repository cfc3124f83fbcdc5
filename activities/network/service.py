"""One guarded client for service APIs: Google, Microsoft Graph, a CalDAV server.

What it can touch: the service's own host, fixed by the code (``www.googleapis.com``,
``graph.microsoft.com``) or by the deployment (a CalDAV URL), never by the model. How it is
confined, beyond the network guard it sends through (``toolcalls.activities.network.guard``):

- https only (a caller may allow ``http`` for a loopback URL it checked itself); TLS always
  verified, with the system roots plus any CA the deployment adds;
- no redirects: a 3xx is an error, never followed, so a credential never leaves its origin;
- responses capped at :data:`MAX_RESPONSE_BYTES` (2 MiB) on the wire and after decoding;
- one request per call of :meth:`ServiceClient.request`: nothing is retried here (a retry is the
  activity's to decide, through Temporal, and never for a write);
- credentials are read when each request is sent (an environment variable, or a file re-read
  every time so an external refresher can rotate the token) and never appear in a message;
- a non-2xx answer keeps its ``status_code`` and never copies the remote body into a message.

:func:`continuation` checks a service's next-page link against the first request's https host
and collection before it is followed; :func:`service_failure` (``service_errors``) turns every
failure into the tool error a model or an operator can act on.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from toolcalls.activities.network.guard import Limits, NetworkGuard, Resolver, any_address
from toolcalls.activities.network.service_errors import (
    MAX_RETRY_AFTER,
    CredentialError,
    LinkRefused,
    ServiceAnswerError,
    ServiceError,
    ServiceStatusError,
    service_failure,
)

__all__ = [
    "MAX_RESPONSE_BYTES",
    "MAX_RETRY_AFTER",
    "CredentialError",
    "Credentials",
    "LinkRefused",
    "Secret",
    "ServiceAnswerError",
    "ServiceClient",
    "ServiceError",
    "ServiceResponse",
    "ServiceStatusError",
    "basic_auth",
    "bearer_token",
    "continuation",
    "service_failure",
    "service_guard",
]

MAX_RESPONSE_BYTES = 2 * 1024 * 1024
"""The spec's cap on a service response, on the wire and after content decoding."""
MAX_SECRET_FILE_BYTES = 64 * 1024
"""A token file larger than this is not a token."""
USER_AGENT = "toolcalls/0.1"
JSON_TYPES = ("application/json", "+json")
_RATE_LIMIT_REASONS = frozenset({"ratelimitexceeded", "userratelimitexceeded"})
"""Google answers some rate limits with 403 and one of these ``reason`` codes."""
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_.]{0,63}")

Credentials = Callable[[], Awaitable[Mapping[str, str]]]
"""Headers that authenticate one request, read afresh each time it is sent."""


@dataclass(frozen=True)
class Secret:
    """Where the worker reads a secret when a request is sent: one environment variable, or a
    file read afresh for every request (an external refresher may replace it at any time)."""

    env: str | None = None
    file: Path | None = None

    def __post_init__(self) -> None:
        if (self.env is None) == (self.file is None):
            raise ValueError("a secret comes from exactly one of an environment variable or a file")

    @property
    def source(self) -> str:
        """Where it is read from, for messages: never the value."""
        return f"environment variable {self.env}" if self.env else f"file {self.file}"

    async def read(self, environ: Mapping[str, str]) -> str:
        """The secret now; raises ``CredentialError`` naming the source, never the value."""
        if self.env is not None:
            value = environ.get(self.env, "")
        else:
            assert self.file is not None
            value = await asyncio.to_thread(_read_secret_file, self.file)
        value = value.strip()
        if not value:
            raise CredentialError(f"the worker's {self.source} is not set or empty")
        if not all(" " < ch <= "~" for ch in value):
            raise CredentialError(
                f"the worker's {self.source} holds characters a header cannot carry"
            )
        return value


def _read_secret_file(path: Path) -> str:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as exc:
        raise CredentialError(
            f"the worker cannot read file {path} ({exc.strerror or 'unreadable'})"
        ) from None
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise CredentialError(f"file {path} is over {MAX_SECRET_FILE_BYTES} bytes")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise CredentialError(f"file {path} holds characters a header cannot carry") from None


def bearer_token(secret: Secret, environ: Mapping[str, str] | None = None) -> Credentials:
    """``Authorization: Bearer <token>``, the token read from ``secret`` for every request."""
    env = os.environ if environ is None else environ

    async def headers() -> Mapping[str, str]:
        return {"Authorization": f"Bearer {await secret.read(env)}"}

    return headers


def basic_auth(
    username: str, secret: Secret, environ: Mapping[str, str] | None = None
) -> Credentials:
    """HTTP Basic with ``username`` and a password read from ``secret`` for every request."""
    env = os.environ if environ is None else environ

    async def headers() -> Mapping[str, str]:
        pair = f"{username}:{await secret.read(env)}".encode()
        return {"Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}

    return headers


def service_guard(
    *,
    verify: Any = True,
    resolver: Resolver | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> NetworkGuard:
    """The guard for a service host fixed by the code or the deployment: any address (a CalDAV
    server may be on the deployment's own network) on any port, TLS verified against ``verify``
    (True, or an ``ssl.SSLContext`` with the deployment's extra CA). ``resolver`` and
    ``transport`` are for tests."""
    return NetworkGuard(
        resolver=resolver,
        admit=any_address,
        allowed_ports=None,
        verify=verify,
        transport=transport,
    )


@dataclass(frozen=True)
class ServiceResponse:
    """A service's answer, read within the cap."""

    url: str
    status_code: int
    headers: httpx.Headers
    body: bytes

    def json(self) -> Any:
        """The body as JSON; raises ``ServiceAnswerError`` (no remote text in the message)."""
        media = self.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        not_json = ServiceAnswerError("answered a body that is not json", self.status_code)
        if media and not media.endswith(JSON_TYPES):
            raise not_json
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            raise not_json from None

    def json_object(self) -> dict[str, Any]:
        """The body as a JSON object."""
        value = self.json()
        if not isinstance(value, dict):
            raise ServiceAnswerError("answered json that is not an object", self.status_code)
        return value


class ServiceClient:
    """Requests to one service, each through the guard, each authenticated afresh.

    ``service`` names it in messages (``google calendar``). ``credentials`` gives the headers
    that authenticate a request (``bearer_token``, ``basic_auth``), called for each one.
    """

    def __init__(
        self,
        service: str,
        *,
        credentials: Credentials | None = None,
        timeout_seconds: float = 30.0,
        guard: NetworkGuard | None = None,
        max_bytes: int = MAX_RESPONSE_BYTES,
        schemes: Collection[str] = ("https",),
        user_agent: str = USER_AGENT,
    ) -> None:
        self.service = service
        self._credentials = credentials
        self._guard = guard or service_guard()
        self._limits = Limits(
            timeout_seconds=timeout_seconds,
            max_bytes=max_bytes,
            max_decoded_bytes=max_bytes,
            max_redirects=0,
        )
        self._schemes = tuple(schemes)
        self._user_agent = user_agent

    async def request(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        accept: Collection[int] = (),
        on_progress: Callable[[int], None] | None = None,
    ) -> ServiceResponse:
        """Send one request and return a 2xx answer (or one whose status is in ``accept``).

        Raises:
            CredentialError: the credential could not be read; nothing was sent.
            ServiceStatusError: any other status, redirects included (never followed).
            NetworkError: from the guard (refused, unreachable, timed out, over the cap).
        """
        target = httpx.URL(str(url))
        if params:
            target = target.copy_merge_params(dict(params))
        sent: dict[str, str] = {"User-Agent": self._user_agent, "Accept": "application/json"}
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False, separators=(",", ":")).encode()
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        secret_names: list[str] = []
        if self._credentials is not None:
            credentials = await self._credentials()
            sent.update(credentials)
            secret_names = [name.lower() for name in credentials]
        response = await self._guard.request(
            method,
            str(target),
            limits=self._limits,
            headers=sent,
            content=content,
            secret_headers=secret_names,
            schemes=self._schemes,
            on_progress=on_progress,
        )
        status = response.status_code
        if not (200 <= status < 300 or status in accept):
            raise ServiceStatusError(status, response.headers, _rate_limited(status, response.body))
        return ServiceResponse(
            url=response.url, status_code=status, headers=response.headers, body=response.body
        )


def _rate_limited(status: int, body: bytes) -> bool:
    """429, or Google's 403 whose ``reason`` code says rate limit (read, never copied)."""
    if status == 429:
        return True
    if status != 403 or len(body) > 65_536:
        return False
    try:
        error = json.loads(body).get("error", {})
        reasons = [item.get("reason", "") for item in error.get("errors", [])]
    except (ValueError, AttributeError, TypeError, RecursionError):
        return False
    return any(
        isinstance(reason, str)
        and _TOKEN.fullmatch(reason) is not None
        and reason.lower() in _RATE_LIMIT_REASONS
        for reason in reasons
    )


_UNRESERVED = re.compile(r"%([0-9A-Fa-f]{2})")


def _normal_path(raw: bytes) -> str:
    """RFC 3986 normalisation of a raw path: escapes of unreserved characters decoded, every
    other escape in upper case, so two spellings of one path compare equal and nothing else."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        if char.isascii() and (char.isalnum() or char in "-._~"):
            return char
        return f"%{match.group(1).upper()}"

    return _UNRESERVED.sub(fix, raw.decode("ascii", "replace").split("?", 1)[0])


def continuation(
    link: str, first: str | httpx.URL, *, fixed_params: Collection[str] = ()
) -> httpx.URL:
    """``link`` (a service's next-page URL) if it stays on ``first``'s https host and port and
    names the same collection (the same path); each of ``fixed_params`` it carries must have the
    value ``first`` gave it. Raises ``LinkRefused`` otherwise: a link cannot switch users,
    calendars or mailboxes."""
    original = httpx.URL(str(first))
    try:
        parsed = httpx.URL(link)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise LinkRefused("the next-page link is not a valid url") from None
    if parsed.scheme != "https" or original.scheme != "https":
        raise LinkRefused("the next-page link is not https")
    if parsed.userinfo:
        raise LinkRefused("the next-page link carries credentials")
    if parsed.host.lower() != original.host.lower() or (parsed.port or 443) != (
        original.port or 443
    ):
        raise LinkRefused("the next-page link leaves the service's host")
    if parsed.fragment:
        raise LinkRefused("the next-page link has a fragment")
    if _normal_path(parsed.raw_path) != _normal_path(original.raw_path):
        raise LinkRefused("the next-page link names another collection")
    for name in fixed_params:
        given = parsed.params.get_list(name)
        if given and given != original.params.get_list(name):
            raise LinkRefused(f"the next-page link changes {name}")
    return parsed
