"""The few Slack Web API methods the channel calls, over httpx.

``chat.postMessage`` posts a request, ``chat.update`` replaces it with its outcome,
``chat.postEphemeral`` tells one person why nothing was done, ``views.open`` opens the reply form.
Every method is a JSON ``POST`` to ``https://slack.com/api/<method>`` with the bot token as a
bearer token, and answers ``{"ok": true, ...}`` or ``{"ok": false, "error": "<code>"}``; a rate
limit is HTTP 429 with ``Retry-After``. Everything that goes wrong is one ``SlackError``, mapped
here once. The transport is the seam a test replaces (``httpx.MockTransport``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

API_URL = "https://slack.com/api/"
USER_AGENT = "toolcalls-slack/0.1"
MAX_RESPONSE_BYTES = 1_048_576
RETRYABLE_ERRORS = frozenset(
    {"ratelimited", "service_unavailable", "internal_error", "fatal_error", "request_timeout"}
)
"""Slack's error codes that a later attempt may not meet."""
SETUP_ERRORS = frozenset(
    {
        "not_authed",
        "invalid_auth",
        "account_inactive",
        "token_revoked",
        "no_permission",
        "missing_scope",
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "invalid_blocks",
    }
)
"""Slack's error codes that only the deployment can mend (its app, token, scopes or channel)."""


class SlackError(Exception):
    """A Web API call that did not succeed: Slack's error code, or what the transport saw."""

    def __init__(
        self, method: str, error: str, *, retryable: bool = False, setup: bool = False
    ) -> None:
        super().__init__(f"slack: {method}: {error}")
        self.method = method
        self.error = error
        self.retryable = retryable
        self.setup = setup or error in SETUP_ERRORS
        """Only the deployment can mend it."""


class SlackAPI:
    """The bot's Web API client; the token is read from ``environ`` at each call."""

    def __init__(
        self,
        token_env: str,
        environ: Mapping[str, str],
        *,
        timeout_seconds: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.token_env = token_env
        self.environ = environ
        self.timeout_seconds = timeout_seconds
        self.transport = transport

    async def call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        """``method`` with ``body``; Slack's answer when it says ``ok``.

        Raises:
            SlackError: the token is not set, the request failed, or Slack answered an error.
        """
        token = self.environ.get(self.token_env)
        if not token:
            raise SlackError(method, f"${self.token_env} is not set", setup=True)
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": USER_AGENT,
        }
        try:
            async with httpx.AsyncClient(
                transport=self.transport, timeout=self.timeout_seconds, follow_redirects=False
            ) as http:
                response = await http.post(API_URL + method, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise SlackError(method, f"{type(exc).__name__}: {exc}", retryable=True) from None
        if response.status_code == 429:
            wait = response.headers.get("retry-after", "?")
            raise SlackError(method, f"ratelimited (retry after {wait} s)", retryable=True)
        if response.status_code != 200 or len(response.content) > MAX_RESPONSE_BYTES:
            raise SlackError(
                method, f"answered HTTP {response.status_code}", retryable=response.is_server_error
            )
        try:
            answer = response.json()
        except ValueError:
            raise SlackError(method, "the answer is not JSON") from None
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            error = answer.get("error") if isinstance(answer, dict) else None
            code = error if isinstance(error, str) else "the answer does not say ok"
            raise SlackError(method, code, retryable=code in RETRYABLE_ERRORS)
        return answer

    async def post_message(self, channel: str, text: str, blocks: list[dict[str, Any]]) -> str:
        """Post a message; its ``ts`` (the message's id in its channel)."""
        body = {"channel": channel, "text": text, "blocks": blocks, "unfurl_links": False}
        answer = await self.call("chat.postMessage", body)
        return str(answer.get("ts", ""))

    async def update_message(
        self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]
    ) -> None:
        body = {"channel": channel, "ts": ts, "text": text, "blocks": blocks}
        await self.call("chat.update", body)

    async def post_ephemeral(self, channel: str, user: str, text: str) -> None:
        """A message only ``user`` sees, in ``channel``."""
        await self.call("chat.postEphemeral", {"channel": channel, "user": user, "text": text})

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> None:
        await self.call("views.open", {"trigger_id": trigger_id, "view": view})
