"""Slack's request signature: is this request from Slack, recent, and new?

Slack signs every request with the app's signing secret: ``X-Slack-Signature`` is ``v0=`` and the
hex HMAC-SHA256 of ``v0:{X-Slack-Request-Timestamp}:{raw body}``. A request is taken only when
that matches (compared in constant time), its timestamp is within five minutes of this clock, and
its signature was not seen in that window: a captured request cannot be replayed, outside the
window for its timestamp, inside it for its signature. Slack does not retry interactions, so a
repeat is always refused. The signatures seen are kept in this process's memory; run one inbox
process behind the interactivity URL, or the window is per process.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable

SIGNATURE_HEADER = "x-slack-signature"
TIMESTAMP_HEADER = "x-slack-request-timestamp"
SIGNATURE_VERSION = "v0"
REPLAY_WINDOW_SECONDS = 300
"""Slack's advice: refuse a request whose timestamp is more than five minutes away."""
MAX_SEEN = 100_000
"""Signatures remembered at most (only requests that verified are remembered)."""


class Refused(Exception):
    """A request not taken: the HTTP status to answer and why, in one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` Slack sends for ``body`` at ``timestamp``."""
    signed = f"{SIGNATURE_VERSION}:{timestamp}:".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={digest}"


class RequestVerifier:
    """Checks each request's signature, age and novelty against one signing secret."""

    def __init__(
        self,
        secret: str,
        *,
        window_seconds: int = REPLAY_WINDOW_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self.window_seconds = window_seconds
        self.clock = clock
        self._seen: dict[str, int] = {}
        """Signature -> until when it is remembered."""

    def verify(self, timestamp: str | None, signature: str | None, body: bytes) -> None:
        """Take the request, or raise ``Refused`` (401) saying why."""
        if not timestamp or not signature:
            raise Refused(401, "slack: the request is not signed")
        expected = slack_signature(self._secret, timestamp, body)
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise Refused(401, "slack: the request's signature does not match")
        now = self.clock()
        if not timestamp.isdigit() or abs(now - int(timestamp)) > self.window_seconds:
            raise Refused(401, "slack: the request's timestamp is more than five minutes away")
        self._seen = {seen: until for seen, until in self._seen.items() if until >= now}
        if signature in self._seen:
            raise Refused(401, "slack: the request was already taken (a replay)")
        if len(self._seen) >= MAX_SEEN:
            raise Refused(503, "slack: too many requests in the replay window")
        self._seen[signature] = int(timestamp) + self.window_seconds
