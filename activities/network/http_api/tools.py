"""``HttpTools``: one configured HTTP API tool, and its catalog entry."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Mapping
from datetime import timedelta
from urllib.parse import quote

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.network.failures import nothing_sent
from toolcalls.activities.network.guard import (
    DNS_TIMEOUT_SECONDS,
    Limits,
    NetworkError,
    NetworkGuard,
    NetworkTimeout,
    NetworkUnavailable,
    TooLarge,
    TransportFailed,
    URLRefused,
    any_address,
)
from toolcalls.activities.network.http_api.models import (
    HttpRequestArgs,
    HttpResponseResult,
    arguments_model,
    encode_body,
    http_capabilities,
)
from toolcalls.activities.network.http_api.responses import build_result
from toolcalls.activities.network.http_paths import PathProblem, build_url, check_header_value
from toolcalls.activities.network.settings import HTTP_READ_METHODS, HttpToolSettings
from toolcalls.activities.progress import ProgressPublisher, published, received
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode, SideEffect

IDEMPOTENCY_SAFE = ":/-_.~@+=!$&'()*,;"
"""Characters of an idempotency key sent as they are; anything else (non-ASCII, spaces, control
characters) is percent-encoded, so every workflow and call id gives a valid, stable header."""

PREVIEW_BODY_CHARS = 65_536
"""The body text an approval preview shows; the exact body is in the request's arguments too."""
USER_AGENT = "toolcalls-http/0.1"
"""Sent unless the deployment configures its own ``User-Agent``."""
EXECUTION_MARGIN = timedelta(seconds=10)
"""Past the lookup and the request timeout: reading the environment, decoding the body,
reporting."""
HEARTBEAT = timedelta(seconds=10)


class HttpTools:
    """One configured HTTP API tool; ``family_for`` gives the subclass the catalog names."""

    def __init__(
        self,
        settings: HttpToolSettings,
        *,
        guard: NetworkGuard | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        # Private attributes only: the tool's dynamic name must never meet an instance attribute.
        self._settings = settings
        self._guard = guard or NetworkGuard(admit=any_address, allowed_ports=None)
        self._environ = os.environ if environ is None else environ

    @classmethod
    def family_for(cls, settings: HttpToolSettings) -> type[HttpTools]:
        """A subclass whose ``<name>`` and ``prepare_<name>`` methods are this tool."""
        name = settings.name
        return type(
            f"HttpTools_{name}",
            (cls,),
            {
                "__module__": cls.__module__,
                "__doc__": f"The configured HTTP API tool {name!r}.",
                name: cls._execute,
                f"prepare_{name}": cls._prepare,
            },
        )

    async def _prepare(self, args: HttpRequestArgs, call: CallContext) -> Prepared:
        """Preview: method, full URL, query and body exactly; header names, never values."""
        s = self._settings
        url = self._url(args)
        body = encode_body(args.body) if args.body is not None else None
        headers = self._headers(args, call)  # a missing variable fails before anyone is asked
        text = None
        if body is not None:
            shown = body.decode()
            cut = len(shown) - PREVIEW_BODY_CHARS
            text = shown[:PREVIEW_BODY_CHARS] + (
                f"\n... ({cut} more characters; the full body is in the arguments)"
                if cut > 0
                else ""
            )
        data = {
            "tool": s.name,
            "method": args.method,
            "url": url,
            "query": [{"name": name, "value": value} for name, value in args.query_pairs],
            "header_names": sorted(headers, key=str.lower),
            "body_bytes": len(body) if body is not None else 0,
            "body_sha256": _sha256(body),
            "timeout_seconds": s.timeout_seconds,
            "max_response_bytes": s.max_response_bytes,
        }
        return Prepared(
            preview=[
                PreviewArtifact(
                    kind="http_request", title=f"{args.method} {url}", text=text, data=data
                )
            ],
            precondition={"method": args.method, "url": url, "body_sha256": _sha256(body)},
        )

    async def _execute(self, args: HttpRequestArgs, call: CallContext) -> HttpResponseResult:
        """Send the request once and return the response, whatever its status."""
        s = self._settings
        url = self._url(args)
        body = encode_body(args.body) if args.body is not None else None
        held = call.precondition
        if held is not None and held != {
            "method": args.method,
            "url": url,
            "body_sha256": _sha256(body),
        }:
            raise tool_error(
                ErrorCode.PRECONDITION_FAILED,
                f"{s.name}: the request differs from the approved one (the deployment's "
                f"base URL changed?): approved {held.get('url')}, now {url}",
            )
        headers = self._headers(args, call)
        limits = Limits(
            timeout_seconds=s.timeout_seconds,
            max_bytes=s.max_response_bytes,
            max_decoded_bytes=s.max_response_bytes,
            max_redirects=0,
        )
        async with (
            Heartbeat(tool=s.name, method=args.method, url=url, bytes=0) as beat,
            published(ProgressPublisher.for_activity()) as progress,
        ):
            try:
                response = await self._guard.request(
                    args.method,
                    url,
                    limits=limits,
                    headers=headers,
                    content=body,
                    secret_headers=tuple(s.headers_from_env),
                    schemes=(url.split(":", 1)[0],),
                    on_progress=received(beat, progress),
                )
            except NetworkError as exc:
                raise self._failure(args.method, exc) from None
        return await asyncio.to_thread(
            build_result, args.method, url, response.status_code, response.headers, response.body
        )

    def _url(self, args: HttpRequestArgs) -> str:
        try:
            return build_url(self._settings.base_url, args.path, args.query_pairs)
        except PathProblem as exc:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"{self._settings.name}: {exc}",
                fixable_args=["path", "query"],
            ) from None

    def _headers(self, args: HttpRequestArgs, call: CallContext) -> dict[str, str]:
        """Configured headers, secrets read from the environment now, and the tool's own."""
        s = self._settings
        headers = dict(s.headers)
        for name, variable in s.headers_from_env.items():
            value = self._environ.get(variable)
            if not value:
                raise tool_error(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"{s.name}: environment variable {variable} (header {name}) is not set "
                    "on the worker",
                )
            problem = check_header_value(value)
            if problem:
                raise tool_error(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"{s.name}: environment variable {variable} (header {name}) {problem}",
                )
            headers[name] = value
        if not any(name.lower() == "user-agent" for name in headers):
            headers["User-Agent"] = USER_AGENT
        if args.body is not None:
            headers["Content-Type"] = "application/json"
        if s.idempotency_header and args.method not in HTTP_READ_METHODS:
            # Workflow and call ids may hold any character; a header value may not.
            headers[s.idempotency_header] = quote(call.idempotency_key, safe=IDEMPOTENCY_SAFE)
        return headers

    def _failure(self, method: str, exc: NetworkError) -> Exception:
        """A guard failure as the tool error a model can act on."""
        name = self._settings.name
        reason = exc.reason
        if isinstance(exc, URLRefused):
            # The deployment wrote the URL: a refused address and a name that does not exist
            # are its to fix.
            return tool_error(ErrorCode.CONFIGURATION_ERROR, f"{name}: {reason}")
        if isinstance(exc, TooLarge):
            # The service did answer: say with what, so a write is not sent again blindly.
            answered = f" (the service answered {exc.status_code})" if exc.status_code else ""
            return tool_error(
                ErrorCode.OUTPUT_TOO_LARGE,
                f"{name}: response {reason}; the limit is {self._settings.max_response_bytes}"
                f"{answered}",
                output={"status_code": exc.status_code},
            )
        write = method not in HTTP_READ_METHODS
        if write and not nothing_sent(exc):
            return tool_error(
                ErrorCode.UNCERTAIN,
                f"{name}: {method} failed after the request may have been sent ({reason}); "
                "the service may have applied it: check before sending it again",
            )
        if isinstance(exc, NetworkUnavailable):
            # The service could not be reached, or the connection broke before an answer: the
            # same call may succeed later. A write here was certainly not sent (one that may have
            # been is uncertain, above), and still gets its one attempt only.
            return tool_error(ErrorCode.NETWORK_UNAVAILABLE, f"{name}: {reason}", retryable=True)
        transient = not isinstance(exc, TransportFailed) or exc.transient
        code = (
            ErrorCode.TIMED_OUT if isinstance(exc, NetworkTimeout) else ErrorCode.EXECUTION_FAILED
        )
        # A write is never retried, even when nothing was sent: one attempt, always.
        return tool_error(code, f"{name}: {reason}", retryable=transient and not write)


def _sha256(body: bytes | None) -> str | None:
    return hashlib.sha256(body).hexdigest() if body is not None else None


def http_tool_spec(settings: HttpToolSettings) -> ToolSpec:
    """The catalog entry of one configured HTTP API tool."""
    methods = ", ".join(settings.allowed_methods)
    usage = (
        f"Call the HTTP API at {settings.base_url} with a path below it, one of {methods}, "
        'query parameters as {"name", "value"} string pairs and a body given as JSON text (not '
        "with GET or HEAD); the model supplies no headers. Returns status_code, selected "
        "headers, body and body_encoding (json, text or base64); error statuses and redirects "
        "are returned, not followed."
    )
    return ToolSpec(
        name=settings.name,
        description=f"{settings.description} {usage}" if settings.description else usage,
        arguments=arguments_model(settings),
        result=HttpResponseResult,
        # Any write method makes the whole tool write-class: one attempt, never re-dispatched,
        # and a worker lost mid-request is uncertain, whichever method the call used.
        side_effect=SideEffect.WRITE if settings.writes else SideEffect.READ,
        capabilities=http_capabilities,
        capability_sets=tuple(
            (capability,)
            for capability, present in (
                ("network.read", any(m in HTTP_READ_METHODS for m in settings.allowed_methods)),
                ("network.write", settings.writes),
            )
            if present
        ),
        timeouts=Timeouts(
            # The lookup has its own bound outside the request's: the tool reports its own
            # timeout before Temporal's start-to-close ends the attempt (uncertain for a write).
            start_to_close=timedelta(seconds=settings.timeout_seconds + DNS_TIMEOUT_SECONDS)
            + EXECUTION_MARGIN,
            heartbeat=HEARTBEAT,
        ),
        implementation=HttpTools.family_for(settings),
    )
