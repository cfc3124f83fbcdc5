"""The calendar tools' arguments and results, checked at plan before anything is asked or sent.

Timestamps are ISO 8601 with an explicit offset (``2026-03-02T09:30:00+01:00`` or ``...Z``);
a naive one, a date without a time and an end not after its start are refused. Text arguments
may not hold control characters (CR, LF, tab, escapes), line or paragraph separators, or
bidirectional controls that would make an approver read something else than what is sent.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, Field, JsonValue, ValidationInfo, field_validator

from toolcalls.activities.base import ToolArgs, ToolResult
from toolcalls.activities.calendar.tokens import (
    MAX_PAGE_TOKEN_CHARS,
    BadPageToken,
    PageToken,
    window_digest,
)

MAX_TITLE_CHARS = 1_000
MAX_DESCRIPTION_CHARS = 8_000
MAX_LOCATION_CHARS = 1_000
MAX_QUERY_CHARS = 500
MAX_TIMESTAMP_CHARS = 64
DEFAULT_MAX_RESULTS = 20
MAX_RESULTS = 100
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, tzinfo=UTC)
"""Instants outside these are refused: no calendar means them, and near the ends of ``datetime``
an offset conversion overflows."""
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""Marks and embeddings that reorder what a reader sees (``U+202E`` reverses the rest)."""
_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def parse_timestamp(text: str) -> datetime:
    """An ISO 8601 timestamp with an explicit offset; raises ``ValueError`` saying what is wrong."""
    example = "like 2026-03-02T09:30:00+01:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 timestamp ({example})") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{text!r} has no offset: give one explicitly ({example}, or Z for UTC)")
    if not EARLIEST <= moment <= LATEST:
        raise ValueError(f"{text!r} is outside the years 1900-2999")
    return moment


def _timestamp(text: str) -> str:
    parse_timestamp(text)
    return text


def _plain(text: str) -> str:
    for char in text:
        what = _REFUSED_CATEGORIES.get(unicodedata.category(char))
        if what is None and char in _BIDI_CONTROLS:
            what = "a bidirectional control"
        if what is not None:
            raise ValueError(f"contains {what} (U+{ord(char):04X}); send plain single-line text")
    return text


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("is blank")
    return text


Timestamp = Annotated[str, Field(max_length=MAX_TIMESTAMP_CHARS), AfterValidator(_timestamp)]


def _after_start(end: str, info: ValidationInfo) -> str:
    start = info.data.get("start")
    if start is not None and parse_timestamp(end) <= parse_timestamp(start):
        raise ValueError(f"end {end} is not after start {start}")
    return end


class ListCalendarEventsArgs(ToolArgs):
    start: Timestamp = Field(description="Start of the interval: ISO 8601 with an offset.")
    end: Timestamp = Field(description="End of the interval (after start), with an offset.")
    query: Annotated[str, AfterValidator(_plain)] = Field(
        default="", max_length=MAX_QUERY_CHARS, description="Text the events must match."
    )
    max_results: int = Field(default=DEFAULT_MAX_RESULTS, ge=1, le=MAX_RESULTS)
    page_token: str | None = Field(
        default=None,
        max_length=MAX_PAGE_TOKEN_CHARS,
        description="next_page_token of the previous page, with the same other arguments.",
    )

    _end_after_start = field_validator("end")(_after_start)

    @field_validator("page_token")
    @classmethod
    def _bound_to_this_listing(cls, token: str | None, info: ValidationInfo) -> str | None:
        if token is None:
            return None
        try:
            decoded = PageToken.decode(token)
        except BadPageToken as exc:
            raise ValueError(str(exc)) from None
        data = info.data
        if all(key in data for key in ("start", "end", "query", "max_results")):
            window = window_digest(
                parse_timestamp(data["start"]),
                parse_timestamp(data["end"]),
                data["query"],
                data["max_results"],
            )
            if decoded.window != window:
                raise ValueError(
                    "belongs to a listing with another interval, query or max_results; keep "
                    "them the same to continue, or leave page_token out to start again"
                )
        return token


class CreateCalendarEventArgs(ToolArgs):
    title: Annotated[str, AfterValidator(_plain), AfterValidator(_not_blank)] = Field(
        max_length=MAX_TITLE_CHARS
    )
    start: Timestamp = Field(description="ISO 8601 with an offset.")
    end: Timestamp = Field(description="After start, ISO 8601 with an offset.")
    description: Annotated[str, AfterValidator(_plain)] = Field(
        default="", max_length=MAX_DESCRIPTION_CHARS
    )
    location: Annotated[str, AfterValidator(_plain)] = Field(
        default="", max_length=MAX_LOCATION_CHARS
    )

    _end_after_start = field_validator("end")(_after_start)


class ListCalendarEventsResult(ToolResult):
    items: list[dict[str, JsonValue]]
    """Events as the service gives them (its own fields); CalDAV events as parsed iCalendar."""
    next_page_token: str | None
    """Pass it back, with the same other arguments, for the next page; a page may be empty and
    still have one."""


class CreateCalendarEventResult(ToolResult):
    id: str
    """The service's id of the event."""
    creation_id: str
    """The identity the event was created under (derived from the call's idempotency key)."""
    already_created: bool
    """True when an earlier attempt of this same call had created it; nothing new was created."""
    event: dict[str, JsonValue]
    """The event as the service returned it."""


def utc_text(moment: datetime) -> str:
    """``2026-03-02T08:30:00Z``: an instant in UTC, as previews show it."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
