"""What a read returns from a MIME message: selected headers, the plain text, and what was left out.

Nested ``multipart`` parts are walked; of a ``multipart/alternative`` the plain-text rendering is
kept. Each text part is decoded with its declared charset; an unknown or wrong one degrades to
replacement characters, never to a failure. HTML parts are never returned (``html_body_omitted``
says when one had no plain alternative); attachment content never is (``has_attachments``).
The walk runs over any tree of parts: an ``email.message.Message`` parsed from raw bytes (IMAP)
or the part tree a service returns (Gmail).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email import policy
from email.header import decode_header, make_header
from email.message import Message
from email.parser import BytesParser
from typing import Any, Protocol

MAX_BODY_CHARS = 20_000
"""Returned plain text is capped at 20,000 characters (spec)."""
SNIPPET_CHARS = 200
LIST_HEADER_CHARS = 500
"""One header value in a list item: a page of 100 stays far below the payload limit."""
READ_HEADER_CHARS = 5_000
LIST_HEADER_BLOCK = 65_536
"""Bytes of a message's selected headers a list fetches (a To of thousands is cut)."""
SELECTED_HEADERS = ("from", "to", "cc", "date", "subject", "message_id")
"""The headers reads return, by their result keys."""
HEADER_NAMES = {
    "from": "From",
    "to": "To",
    "cc": "Cc",
    "date": "Date",
    "subject": "Subject",
    "message_id": "Message-ID",
}
HEADER_FIELDS = " ".join(name.upper() for name in HEADER_NAMES.values())
"""For IMAP ``BODY.PEEK[HEADER.FIELDS (...)]``."""

_FOLDING = re.compile(r"\r?\n[ \t]+")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Part(Protocol):
    """One MIME part as the walk sees it."""

    content_type: str
    disposition: str | None
    filename: str | None
    charset: str | None

    def children(self) -> Sequence[Part]: ...

    def payload(self) -> bytes:
        """The part's content, transfer encoding undone."""
        ...


@dataclass
class Found:
    texts: list[str] = field(default_factory=list)
    html: bool = False
    attachments: bool = False


def walk(part: Part) -> Found:
    """The plain text of ``part`` and whether HTML or attachments were left out."""
    found = Found()
    maintype, _, subtype = part.content_type.partition("/")
    if maintype == "multipart":
        children = [walk(child) for child in part.children()]
        found.attachments = any(child.attachments for child in children)
        if subtype == "alternative":
            # The last alternative is the richest; keep the last one that has plain text.
            with_text = [child for child in children if child.texts]
            if with_text:
                found.texts = with_text[-1].texts
            else:
                found.html = any(child.html for child in children)
        else:
            for child in children:
                found.texts += child.texts
                found.html = found.html or child.html
        return found
    named = part.filename is not None and part.disposition != "inline"
    if part.disposition == "attachment" or maintype == "message" or named:
        found.attachments = True  # a named part without an inline disposition is a file
    elif part.content_type == "text/plain":
        found.texts.append(decode_text(part.payload(), part.charset))
    elif part.content_type == "text/html":
        found.html = True
    else:
        found.attachments = True
    return found


def decode_text(data: bytes, charset: str | None) -> str:
    """``data`` in its declared charset; unknown, wrong or non-text codecs degrade to UTF-8 with
    replacement characters."""
    name = "utf-8"
    if charset:
        try:
            info = codecs.lookup(charset.strip().strip('"'))
        except (LookupError, ValueError, TypeError):
            info = None
        if info is not None and getattr(info, "_is_text_encoding", True):
            name = info.name
    try:
        return data.decode(name, errors="replace")
    except (LookupError, ValueError, TypeError, UnicodeError):
        return data.decode("utf-8", errors="replace")


def decode_header_value(raw: str, limit: int) -> str:
    """A header's raw value unfolded, RFC 2047 words decoded, controls dropped, capped.

    Raw 8-bit bytes (which the parser carries as surrogate escapes) are read as UTF-8.
    """
    raw = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    unfolded = _FOLDING.sub(" ", raw).strip()
    try:
        text = str(make_header(decode_header(unfolded)))
    except (LookupError, ValueError, TypeError, UnicodeError, AssertionError):
        text = unfolded
    text = _CONTROLS.sub("", text.replace("\t", " "))
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def selected_headers(items: Iterable[tuple[str, Any]], limit: int) -> dict[str, str | None]:
    """The selected headers out of raw ``(name, value)`` pairs; repeated ones joined."""
    wanted = {name.lower(): key for key, name in HEADER_NAMES.items()}
    values: dict[str, list[str]] = {}
    for name, raw in items:
        key = wanted.get(str(name).lower())
        if key is not None:
            values.setdefault(key, []).append(decode_header_value(str(raw), limit))
    return {key: ", ".join(values[key]) if key in values else None for key in SELECTED_HEADERS}


def read_result(
    message_id: str, headers: dict[str, str | None], found: Found, snippet: str | None = None
) -> dict[str, Any]:
    """The ``read_email`` result: the body capped, a snippet, what was left out."""
    body = "\n\n".join(text.replace("\r\n", "\n").strip("\n") for text in found.texts)
    truncated = len(body) > MAX_BODY_CHARS
    if truncated:
        body = body[:MAX_BODY_CHARS]
    return {
        "id": message_id,
        "headers": headers,
        "snippet": make_snippet(snippet if snippet is not None else body),
        "body": body,
        "body_truncated": truncated,
        "has_attachments": found.attachments,
        "html_body_omitted": found.html,
    }


def make_snippet(text: str) -> str:
    collapsed = " ".join(text.split())
    return (
        collapsed if len(collapsed) <= SNIPPET_CHARS else collapsed[: SNIPPET_CHARS - 1] + "\u2026"
    )


class _ParsedPart:
    """A part of a message parsed from raw bytes."""

    def __init__(self, message: Message) -> None:
        self._message = message
        self.content_type = _safe(message.get_content_type, "text/plain").lower()
        self.disposition = _safe(message.get_content_disposition, None)
        self.filename = _safe(message.get_filename, None)
        self.charset = _safe(message.get_content_charset, None)

    def children(self) -> Sequence[Part]:
        payload = self._message.get_payload()
        if not isinstance(payload, list):
            return []
        return [_ParsedPart(child) for child in payload if isinstance(child, Message)]

    def payload(self) -> bytes:
        data = _safe(lambda: self._message.get_payload(decode=True), b"")
        return data if isinstance(data, bytes) else b""


def _safe(getter: Any, default: Any) -> Any:
    """A malformed header or payload degrades to ``default``: a read never fails on it."""
    try:
        return getter()
    except Exception:
        return default


def parse_raw(raw: bytes, message_id: str) -> dict[str, Any]:
    """The ``read_email`` result for one raw RFC 5322 message."""
    message = BytesParser(policy=policy.compat32).parsebytes(raw)
    headers = selected_headers(message.raw_items(), READ_HEADER_CHARS)
    return read_result(message_id, headers, walk(_ParsedPart(message)))


def parse_header_block(raw: bytes) -> dict[str, str | None]:
    """The selected headers of a header block (an IMAP ``HEADER.FIELDS`` fetch)."""
    message = BytesParser(policy=policy.compat32).parsebytes(raw, headersonly=True)
    return selected_headers(message.raw_items(), LIST_HEADER_CHARS)
