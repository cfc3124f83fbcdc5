"""``web_search``: one query to one explicitly chosen engine, through the network guard.

Each engine is a fixed HTTPS endpoint reached only through ``NetworkGuard`` (public addresses
only, no redirects followed, 2,000,000 bytes and 10 s per request). The Brave key is read from the
worker's environment when a Brave search runs, sent only to Brave's origin, and never written to a
result, an error or a log. There is no fallback: a failing engine fails the call, with an error
saying what to do instead.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from datetime import timedelta

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.network.guard import (
    GuardedResponse,
    Limits,
    NetworkError,
    NetworkGuard,
    NetworkTimeout,
    NetworkUnavailable,
    NoSuchHost,
    TooLarge,
    TransportFailed,
    URLRefused,
    retry_after,
)
from toolcalls.activities.network.search import brave, duckduckgo, wikipedia
from toolcalls.activities.network.search.engine import (
    MAX_BODY_BYTES,
    Challenge,
    EngineRequest,
    Page,
    UnexpectedAnswer,
)
from toolcalls.activities.network.search.models import Engine, WebSearchArgs, WebSearchResult
from toolcalls.activities.network.settings import WebSearchSettings
from toolcalls.workflows.models.call import ErrorCode

TOOL = "web_search"
LIMITS = Limits(
    timeout_seconds=10,
    max_bytes=MAX_BODY_BYTES,
    max_decoded_bytes=MAX_BODY_BYTES,
    max_redirects=0,
)
"""Every engine: 10 s per request, 2,000,000 bytes on the wire and decoded, no redirects (spec)."""
MAX_RETRY_AFTER = timedelta(seconds=60)
"""A rate limit asking for a longer wait is reported as not retryable rather than waited out."""
KEYLESS_HINT = 'use engine="wikipedia" for keyless search'

Parser = Callable[[bytes, int], Page]
PARSERS: Mapping[Engine, Parser] = {
    "brave": brave.parse,
    "duckduckgo": duckduckgo.parse,
    "wikipedia": wikipedia.parse,
}


class WebSearchTools:
    """The ``web_search`` tool of one deployment.

    ``guard`` is the only way out to the network (tests give it a mock transport); ``environ`` is
    where the Brave key is looked up, at each Brave call, so a key set or rotated after the worker
    started is used.
    """

    def __init__(
        self,
        settings: WebSearchSettings | None = None,
        *,
        guard: NetworkGuard | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings or WebSearchSettings()
        self.guard = guard or NetworkGuard()
        self.environ: Mapping[str, str] = os.environ if environ is None else environ

    async def web_search(self, args: WebSearchArgs, call: CallContext) -> WebSearchResult:
        engine = args.engine
        if engine not in self.settings.engines:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"{TOOL}: engine: {engine!r} is not offered by this deployment; choose one of "
                f"{', '.join(self.settings.engines)}",
                fixable_args=["engine"],
            )
        key = self._brave_key() if engine == "brave" else ""
        request = self._request(args, key)
        async with Heartbeat(engine=engine, received_bytes=0) as beat:
            response = await self._send(engine, request, key, beat)
        _check_status(engine, response, self.settings.brave_key_env)
        try:
            page = await asyncio.to_thread(PARSERS[engine], response.body, args.max_results)
        except Challenge as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"{TOOL}: {exc}; it is not retried or bypassed; {KEYLESS_HINT}",
            ) from None
        except UnexpectedAnswer as exc:
            hint = f"; {KEYLESS_HINT}" if engine == "duckduckgo" else ""
            raise tool_error(ErrorCode.EXECUTION_FAILED, f"{TOOL}: {exc}{hint}") from None
        return WebSearchResult(
            query=args.query,
            engine=engine,
            results=page.hits,
            more_results_available=page.more,
        )

    def _brave_key(self) -> str:
        name = self.settings.brave_key_env
        key = self.environ.get(name, "").strip()
        if not key:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"{TOOL}: engine brave needs an API key in the worker's {name} environment "
                f"variable, which is not set; {KEYLESS_HINT}",
            )
        # The key becomes a header value: printable ASCII only (never echoed back).
        if not all(" " <= ch <= "~" for ch in key):
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"{TOOL}: the worker's {name} is not a valid API key (non-printable or "
                "non-ASCII characters)",
            )
        return key

    def _request(self, args: WebSearchArgs, key: str) -> EngineRequest:
        agent = self.settings.user_agent
        if args.engine == "brave":
            return brave.request(args, agent, key)
        if args.engine == "duckduckgo":
            return duckduckgo.request(args, agent)
        return wikipedia.request(args, agent)

    async def _send(
        self, engine: str, request: EngineRequest, key: str, beat: Heartbeat
    ) -> GuardedResponse:
        try:
            return await self.guard.request(
                "GET",
                request.url,
                limits=LIMITS,
                headers=request.headers,
                secret_headers=request.secret_headers,
                schemes=("https",),
                on_progress=lambda received: beat.update(received_bytes=received),
            )
        except NetworkError as exc:
            raise _network_error(engine, exc, key) from None


def _network_error(engine: str, exc: NetworkError, key: str) -> Exception:
    reason = exc.reason.replace(key, "[redacted]") if key else exc.reason
    message = f"{TOOL}: {engine}: {reason}"
    # The endpoints are fixed provider names that exist: "no such name" can only come from the
    # worker's resolver, so it is an outage like any other, never the query's fault.
    if isinstance(exc, NetworkUnavailable | NoSuchHost):
        return tool_error(ErrorCode.NETWORK_UNAVAILABLE, message, retryable=True)
    if isinstance(exc, NetworkTimeout):
        return tool_error(ErrorCode.EXECUTION_FAILED, message, retryable=True)
    if isinstance(exc, TransportFailed):
        # A certificate that does not verify stays broken on a retry.
        return tool_error(ErrorCode.EXECUTION_FAILED, message, retryable=exc.transient)
    if isinstance(exc, TooLarge):
        message = f"{TOOL}: {engine}: answer over {MAX_BODY_BYTES} bytes ({reason})"
    elif isinstance(exc, URLRefused):
        message = f"{TOOL}: {engine}: endpoint refused by the network guard: {reason}"
    return tool_error(ErrorCode.EXECUTION_FAILED, message)


def _check_status(engine: Engine, response: GuardedResponse, key_env: str) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    answered = f"{TOOL}: {engine} answered HTTP {status}"
    if status == 429:
        delay = retry_after(response.headers.get("retry-after"))
        if delay is not None and delay > MAX_RETRY_AFTER:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"{answered} (rate limited for {delay.total_seconds():.0f} s)",
            )
        wait = f"; retry after {delay.total_seconds():g} s" if delay is not None else ""
        raise tool_error(
            ErrorCode.EXECUTION_FAILED,
            f"{answered} (rate limited){wait}",
            retryable=True,
            next_retry_delay=delay,
        )
    if status in (401, 403) and engine == "brave":
        raise tool_error(
            ErrorCode.CONFIGURATION_ERROR,
            f"{answered}: the key in the worker's {key_env} (or its plan) was refused",
        )
    if status in (401, 403) and engine == "duckduckgo":
        raise tool_error(ErrorCode.EXECUTION_FAILED, f"{answered} (blocked); {KEYLESS_HINT}")
    if status >= 500:
        raise tool_error(ErrorCode.EXECUTION_FAILED, f"{answered} (provider error)", retryable=True)
    if 300 <= status < 400:
        raise tool_error(ErrorCode.EXECUTION_FAILED, f"{answered}; redirects are not followed")
    raise tool_error(ErrorCode.EXECUTION_FAILED, answered)
