"""DuckDuckGo's non-JavaScript HTML search (``html.duckduckgo.com/html/``), best effort.

The page is made for people, not programs: its markup can change and it may answer with a
human-verification challenge. This module recognises the result list, the no-results notice and
the challenge, and nothing else; anything it does not recognise is an error, never an empty
result. Ads stay where DuckDuckGo put them, marked sponsored, with their click URLs intact;
organic links arrive wrapped in DuckDuckGo's redirect (``//duckduckgo.com/l/?uddg=<target>``) and
are unwrapped here, without a request, and checked like any other link. No browser is imitated
and a challenge is never retried or worked around.

Parsing is the standard library's ``html.parser``: it keeps no tree and never recurses, so deep
nesting costs nothing, and what it collects per result is bounded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

from toolcalls.activities.network.search.engine import (
    MAX_BODY_BYTES,
    Challenge,
    EngineRequest,
    Page,
    UnexpectedAnswer,
    endpoint,
)
from toolcalls.activities.network.search.models import (
    MAX_SNIPPET_CHARS,
    MAX_TITLE_CHARS,
    SearchHit,
    WebSearchArgs,
)
from toolcalls.activities.network.search.text import clip, result_url

ENDPOINT = "https://html.duckduckgo.com/html/"
FRESHNESS = {"day": "d", "week": "w", "month": "m", "year": "y"}
REDIRECT_HOSTS = frozenset({"duckduckgo.com", "www.duckduckgo.com", "html.duckduckgo.com"})
MAX_ENTRIES = 50
"""Results collected from one page (the page has about 30; at most 11 are needed)."""
PARSE_SECONDS = 3.0
"""A result page (about 50 KB) parses in milliseconds; one that takes seconds is hostile."""
FEED_CHARS = 65_536
_CHALLENGE_MARKERS = ("anomaly", "challenge", "captcha")


def request(args: WebSearchArgs, user_agent: str) -> EngineRequest:
    params = {"q": args.query}
    if args.freshness != "any":
        params["df"] = FRESHNESS[args.freshness]
    return EngineRequest(
        url=endpoint(ENDPOINT, params),
        headers={"Accept": "text/html", "User-Agent": user_agent},
    )


def organic_url(href: str) -> str | None:
    """The target of an organic result link, unwrapped from DuckDuckGo's redirect and checked."""
    link = result_url(href)
    if link is None:
        return None
    parts = urlsplit(link)
    if parts.hostname in REDIRECT_HOSTS and parts.path in ("/l/", "/l"):
        targets = parse_qs(parts.query).get("uddg", [])
        if len(targets) != 1:
            return None
        # A target that is itself scheme-relative stays refused: only an explicit http(s) URL.
        target = targets[0].strip()
        return result_url(target) if not target.startswith("//") else None
    return link


@dataclass
class _Entry:
    sponsored: bool
    href: str | None = None
    title: list[str] = field(default_factory=list)
    snippet: list[str] = field(default_factory=list)


class _ResultsPage(HTMLParser):
    """Collects result entries and the markers that say what kind of page this is."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.entries: list[_Entry] = []
        self.has_results_list = False
        self.no_results = False
        self.challenge = False
        self.next_page = False
        self._in_nav = 0
        self._current: _Entry | None = None
        self._capture: str | None = None
        self._capture_tag = ""
        self._capture_depth = 0
        self._capture_chars = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._capture is not None and tag == self._capture_tag:
            self._capture_depth += 1
        if tag == "div" and self._in_nav:
            self._in_nav += 1
        if not attrs:
            return
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        ident = values.get("id") or ""
        names = [ident.lower(), *(c.lower() for c in classes)]
        if any(m in name for m in _CHALLENGE_MARKERS for name in names):
            self.challenge = True
        if tag == "form" and "anomaly" in (values.get("action") or ""):
            self.challenge = True
        if ident == "links" or "serp__results" in classes:
            self.has_results_list = True
        if "no-results" in classes or "result--no-result" in classes:
            self.no_results = True
        if tag == "div" and "nav-link" in classes and not self._in_nav:
            self._in_nav = 1
        if self._in_nav and tag == "input" and (values.get("value") or "").lower() == "next":
            self.next_page = True
        if tag == "div" and "result" in classes and "result--no-result" not in classes:
            self._current = None
            if len(self.entries) < MAX_ENTRIES:
                self._current = _Entry(sponsored="result--ad" in classes)
                self.entries.append(self._current)
            return
        entry = self._current
        if entry is None or self._capture is not None:
            return
        if tag == "a" and "result__a" in classes and entry.href is None:
            entry.href = values.get("href") or ""
            self._start_capture("title", tag)
        elif "result__snippet" in classes and not entry.snippet:
            self._start_capture("snippet", tag)

    def _start_capture(self, name: str, tag: str) -> None:
        self._capture = name
        self._capture_tag = tag
        self._capture_depth = 1
        self._capture_chars = 0

    def handle_endtag(self, tag: str) -> None:
        if self._in_nav and tag == "div":
            self._in_nav -= 1
        if self._capture is not None and tag == self._capture_tag:
            self._capture_depth -= 1
            if self._capture_depth == 0:
                self._capture = None

    def handle_data(self, data: str) -> None:
        entry = self._current
        if self._capture is None or entry is None:
            return
        # Twice the result's limit, so that squashing whitespace still leaves enough to clip.
        limit = (MAX_TITLE_CHARS if self._capture == "title" else MAX_SNIPPET_CHARS) * 2
        room = limit - self._capture_chars
        if room <= 0:
            return
        piece = data[:room]
        self._capture_chars += len(piece)
        (entry.title if self._capture == "title" else entry.snippet).append(piece)


def parse(body: bytes, max_results: int) -> Page:
    if len(body) > MAX_BODY_BYTES:
        raise UnexpectedAnswer(f"duckduckgo answered more than {MAX_BODY_BYTES} bytes")
    page = _ResultsPage()
    text = body.decode("utf-8", errors="replace")
    # html.parser rescans an unfinished construct on every feed, and some hostile inputs make it
    # quadratic; fed in slices it returns often enough to be stopped at a deadline. close() is
    # never called: it would finish the same constructs one character at a time, and whatever
    # is still unfinished at the end of the page holds no results.
    deadline = time.monotonic() + PARSE_SECONDS
    for start in range(0, len(text), FEED_CHARS):
        page.feed(text[start : start + FEED_CHARS])
        if time.monotonic() > deadline:
            raise UnexpectedAnswer(
                f"duckduckgo answered a page that does not parse within {PARSE_SECONDS:g} s"
            )
    if page.challenge:
        raise Challenge("duckduckgo answered with a human-verification challenge")
    if not page.has_results_list:
        raise UnexpectedAnswer("duckduckgo answered a page whose markup is not recognised")
    readable = [entry for entry in page.entries if entry.href and "".join(entry.title).strip()]
    if not readable and not page.no_results:
        # A result list with no result we can read, and no "No results." notice: the markup moved.
        raise UnexpectedAnswer("duckduckgo answered results whose markup is not recognised")
    hits: list[SearchHit] = []
    for entry in readable:
        hit = _hit(entry)
        if hit is not None:
            hits.append(hit)
    return Page(hits=hits[:max_results], more=page.next_page or len(hits) > max_results)


def _hit(entry: _Entry) -> SearchHit | None:
    if not entry.href:
        return None
    title = clip("".join(entry.title), MAX_TITLE_CHARS)
    if not title:
        return None
    url = result_url(entry.href) if entry.sponsored else organic_url(entry.href)
    if url is None:
        return None
    return SearchHit(
        title=title,
        url=url,
        snippet=clip("".join(entry.snippet), MAX_SNIPPET_CHARS),
        sponsored=entry.sponsored,
    )
