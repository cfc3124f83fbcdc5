"""Readable text and title from an HTML document, with the standard library's ``html.parser``.

What a reader would see, roughly: no script, style, noscript, template, svg or iframe content, no
elements marked hidden (``hidden``, ``aria-hidden="true"``, inline ``display:none`` /
``visibility:hidden``, ``<input type=hidden>``), block elements as line breaks, whitespace
collapsed. Pure and CPU-bound: callers run it off the event loop.

Bounded in time: the standard library's parser, on the Pythons this project runs on, is quadratic
on some malformed input when it is closed (each unterminated ``<a b='`` or ``<!--`` rescans the
rest of the document), so ``extract`` raises :class:`TooSlow` once ``EXTRACT_SECONDS`` have
passed, checked at every piece of text and tag the parser reports.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser

MAX_TITLE_CHARS = 1_000
EXTRACT_SECONDS = 10.0
"""The most time extraction may take; a 4 MB page of ordinary markup takes about 1.5 s."""
MAX_DEPTH = 1_024
"""Elements nested deeper than this are not tracked (their text still counts, hidden or not is
inherited from the deepest tracked ancestor), so a hostile document cannot grow the stack."""

SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "head"})
VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
BLOCK = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "br",
        "caption",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "html",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
_HIDDEN_STYLE = re.compile(r"(display\s*:\s*none|visibility\s*:\s*hidden)", re.IGNORECASE)
_SPACES = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r"[\r\n]+")


class TooSlow(ValueError):
    """Extraction ran past its deadline (hostile or badly malformed markup)."""


@dataclass(frozen=True)
class Extracted:
    """What ``extract`` found."""

    title: str | None
    text: str


def _hidden(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    if tag in SKIPPED:
        return True
    values = {name: (value or "") for name, value in attrs}
    if "hidden" in values:
        return True
    if values.get("aria-hidden", "").strip().lower() == "true":
        return True
    if tag == "input" and values.get("type", "").strip().lower() == "hidden":
        return True
    return bool(_HIDDEN_STYLE.search(values.get("style", "")))


@dataclass(frozen=True)
class _Open:
    """An open element and what it passes on to its content."""

    tag: str
    hidden: bool
    pre: bool
    foreign: bool


_ROOT = _Open(tag="", hidden=False, pre=False, foreign=False)


class _Reader(HTMLParser):
    def __init__(self, seconds: float) -> None:
        super().__init__(convert_charrefs=True)
        self._deadline = time.monotonic() + seconds
        self.parts: list[str] = []
        self.title: list[str] = []
        self._in_title = False
        self._title_done = False
        self._open: list[_Open] = []
        # How many of each tag are open: an end tag with none open is ignored at once, so the
        # search for its element always succeeds and costs no more than the pops it makes.
        self._counts: Counter[str] = Counter()

    @property
    def _top(self) -> _Open:
        return self._open[-1] if self._open else _ROOT

    def _check_time(self) -> None:
        if time.monotonic() > self._deadline:
            raise TooSlow("html took too long to extract (malformed markup?)")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._check_time()
        top = self._top
        if tag == "title" and not self._title_done and not top.foreign:
            self._in_title = True
            return
        hidden = top.hidden or _hidden(tag, attrs)
        if tag in BLOCK and not hidden:
            self.parts.append("\n")
        if tag in ("td", "th") and not hidden:
            self.parts.append(" ")
        if tag not in VOID and len(self._open) < MAX_DEPTH:
            pre = top.pre or tag in ("pre", "textarea")
            self._open.append(_Open(tag, hidden, pre, top.foreign or tag in ("svg", "math")))
            self._counts[tag] += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in BLOCK and not (self._top.hidden or _hidden(tag, attrs)):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        self._check_time()
        if tag == "title" and self._in_title:
            self._in_title = False
            self._title_done = True
            return
        if not self._counts[tag]:
            return
        while self._open:
            element = self._open.pop()
            self._counts[element.tag] -= 1
            if element.tag == tag:
                if tag in BLOCK and not element.hidden:
                    self.parts.append("\n")
                return

    def handle_data(self, data: str) -> None:
        self._check_time()
        if self._in_title:
            self.title.append(data)
        elif not self._top.hidden:
            # Source line breaks are spaces in HTML, except inside <pre>.
            self.parts.append(data if self._top.pre else _NEWLINES.sub(" ", data))


def collapse(text: str) -> str:
    """Runs of spaces and tabs to one space, lines stripped, no blank lines."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def extract(html: str, seconds: float | None = None) -> Extracted:
    """The readable text and the first ``<title>`` of ``html``; ``TooSlow`` after ``seconds``
    (``EXTRACT_SECONDS`` when None)."""
    reader = _Reader(EXTRACT_SECONDS if seconds is None else seconds)
    reader.feed(html)
    reader.close()
    title = collapse("".join(reader.title).replace("\n", " "))[:MAX_TITLE_CHARS] or None
    return Extracted(title=title, text=collapse("".join(reader.parts)))
