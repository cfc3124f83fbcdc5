"""Provider text and links made safe to hand to a model: plain, bounded, http(s) only."""

from __future__ import annotations

import ipaddress
import unicodedata
from html.parser import HTMLParser
from urllib.parse import urlsplit

from toolcalls.activities.network.guard import public_only
from toolcalls.activities.network.search.models import MAX_URL_CHARS

MARKUP_FACTOR = 8
"""Markup longer than this many times the text limit is cut before it is parsed."""
ELLIPSIS = "\u2026"
_SKIPPED = {"script", "style"}


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def squash(text: str) -> str:
    """Whitespace runs as one space, control characters dropped, ends stripped."""
    kept = "".join(ch if unicodedata.category(ch) != "Cc" else " " for ch in text)
    return " ".join(kept.split())


def clip(text: str, limit: int) -> str:
    """``text`` squashed and, if longer than ``limit``, cut to it with an ellipsis."""
    text = squash(text)
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + ELLIPSIS


def plain_text(markup: str, limit: int) -> str:
    """Provider markup (``<strong>``, ``<span class="searchmatch">``, entities) as plain text."""
    parser = _TextParser()
    parser.feed(markup[: limit * MARKUP_FACTOR])
    parser.close()
    return clip("".join(parser.parts), limit)


def result_url(raw: str) -> str | None:
    """A result's link if it is one to pass on: absolute http(s), no credentials, not local.

    A scheme-relative link (``//host/path``) is taken as https. Host names are not resolved here:
    a link is only a candidate, and ``fetch_url`` checks its destination again if it is followed.
    IP literals that could only reach this side of the network are dropped now.
    """
    url = raw.strip()
    if url.startswith("//"):
        url = "https:" + url
    if len(url) > MAX_URL_CHARS or any(
        ch.isspace() or unicodedata.category(ch) == "Cc" for ch in url
    ):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    if host == "localhost" or host.endswith(".localhost"):
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return url
    return url if public_only(address) is None else None
