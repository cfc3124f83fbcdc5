"""Identities the calendar tools derive: a creation's identity and bound page tokens (pure).

**A creation's identity** is a function of the call's idempotency key alone
(``"{workflow_id}:{call_id}"``): the same call always asks its service for the same event id,
so however often it is sent, one event exists. It is the base32hex (lower case, no padding) of
``sha256("toolcalls calendar event\\0" + key)``: 52 characters from ``0-9a-v``, which Google
takes as an event id, Graph as a ``transactionId`` and CalDAV as a resource name and UID.

**A page token** carries the backend's own continuation (a page token, a next link, a cursor)
with two digests: of the backend and calendar (the *scope*), and of the interval, query and page
size (the *window*). A token presented with another window is refused at plan; one from another
scope when the call runs. Either way nothing is sent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

CREATION_DOMAIN = b"toolcalls calendar event\x00"
TOKEN_PREFIX = "cal1."
MAX_PAGE_TOKEN_CHARS = 16_384
"""A Graph next link is a long URL; its token stays far below this."""
_DIGEST_CHARS = 24


def creation_id(idempotency_key: str) -> str:
    """The identity a call's event is created under (see the module docstring)."""
    digest = hashlib.sha256(CREATION_DOMAIN + idempotency_key.encode("utf-8")).digest()
    return base64.b32hexencode(digest).decode("ascii").rstrip("=").lower()


def _digest(*parts: object) -> str:
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]


def scope_digest(scope: str) -> str:
    """The digest of a backend and calendar (``google:primary``, a CalDAV URL and user)."""
    return _digest("scope", scope)


def window_digest(start: datetime, end: datetime, query: str, max_results: int) -> str:
    """The digest of a listing's interval (as instants), query and page size."""
    utc = [moment.astimezone(UTC).isoformat() for moment in (start, end)]
    return _digest("window", *utc, query, max_results)


class BadPageToken(ValueError):
    """Not a page token of this tool, or one of another listing."""


@dataclass(frozen=True)
class PageToken:
    scope: str
    window: str
    cursor: str

    def encode(self) -> str:
        data = json.dumps([self.scope, self.window, self.cursor], separators=(",", ":"))
        return TOKEN_PREFIX + base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> PageToken:
        """Raises ``BadPageToken``."""
        refused = BadPageToken("is not a next_page_token returned by list_calendar_events")
        if not text.startswith(TOKEN_PREFIX) or len(text) > MAX_PAGE_TOKEN_CHARS:
            raise refused
        body = text[len(TOKEN_PREFIX) :]
        try:
            data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (binascii.Error, ValueError, RecursionError):
            raise refused from None
        if not (
            isinstance(data, list) and len(data) == 3 and all(isinstance(x, str) for x in data)
        ):
            raise refused
        return cls(scope=data[0], window=data[1], cursor=data[2])
