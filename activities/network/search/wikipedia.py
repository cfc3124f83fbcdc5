"""English Wikipedia's REST page search (``/w/rest.php/v1/search/page``): keyless, documented."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from toolcalls.activities.network.search.engine import (
    EngineRequest,
    Page,
    UnexpectedAnswer,
    endpoint,
    load_json,
)
from toolcalls.activities.network.search.models import (
    MAX_DESCRIPTION_CHARS,
    MAX_SNIPPET_CHARS,
    MAX_TITLE_CHARS,
    MAX_URL_CHARS,
    SearchHit,
    WebSearchArgs,
)
from toolcalls.activities.network.search.text import clip, plain_text

ENDPOINT = "https://en.wikipedia.org/w/rest.php/v1/search/page"
ARTICLE_BASE = "https://en.wikipedia.org/wiki/"
MAX_KEY_CHARS = 512
"""MediaWiki titles are at most 255 bytes; a longer key is not an article's."""


def request(args: WebSearchArgs, user_agent: str) -> EngineRequest:
    # One page more than asked for tells whether more results exist; the API has no total.
    params = {"q": args.query, "limit": str(args.max_results + 1)}
    return EngineRequest(
        url=endpoint(ENDPOINT, params),
        headers={"Accept": "application/json", "User-Agent": user_agent},
    )


def article_url(key: str) -> str:
    """The article's URL; every reserved character of the key is escaped, ``/`` included, so
    a key such as ``../../api/rest_v1/page/html/X`` stays one path segment under ``/wiki/``."""
    return ARTICLE_BASE + quote(key, safe="")


def parse(body: bytes, max_results: int) -> Page:
    document = load_json(body, "wikipedia")
    pages = document.get("pages") if isinstance(document, dict) else None
    if not isinstance(pages, list):
        raise UnexpectedAnswer("wikipedia answered JSON without a pages list")
    hits = [hit for hit in map(_hit, pages) if hit is not None]
    return Page(hits=hits[:max_results], more=len(hits) > max_results)


def _hit(page: Any) -> SearchHit | None:
    if not isinstance(page, dict):
        return None
    title = page.get("title")
    key = page.get("key")
    if not isinstance(title, str) or not title.strip():
        return None
    if not isinstance(key, str) or not key.strip():
        key = title.replace(" ", "_")
    if len(key) > MAX_KEY_CHARS:
        return None
    # Percent-encoding can make a key nine times longer: the URL bound applies here too.
    url = article_url(key)
    if len(url) > MAX_URL_CHARS:
        return None
    excerpt = page.get("excerpt")
    description = page.get("description")
    return SearchHit(
        title=clip(title, MAX_TITLE_CHARS),
        url=url,
        snippet=plain_text(excerpt, MAX_SNIPPET_CHARS) if isinstance(excerpt, str) else "",
        sponsored=False,
        description=clip(description, MAX_DESCRIPTION_CHARS) or None
        if isinstance(description, str)
        else None,
    )
