"""Brave Search API (``/res/v1/web/search``): a documented JSON API behind a subscription key."""

from __future__ import annotations

from typing import Any

from toolcalls.activities.network.search.engine import (
    EngineRequest,
    Page,
    UnexpectedAnswer,
    endpoint,
    load_json,
)
from toolcalls.activities.network.search.models import (
    MAX_SNIPPET_CHARS,
    MAX_TITLE_CHARS,
    SearchHit,
    WebSearchArgs,
)
from toolcalls.activities.network.search.text import plain_text, result_url

ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
KEY_HEADER = "X-Subscription-Token"
FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}


def request(args: WebSearchArgs, user_agent: str, key: str) -> EngineRequest:
    params = {"q": args.query, "count": str(args.max_results)}
    if args.freshness != "any":
        params["freshness"] = FRESHNESS[args.freshness]
    return EngineRequest(
        url=endpoint(ENDPOINT, params),
        headers={"Accept": "application/json", "User-Agent": user_agent, KEY_HEADER: key},
        secret_headers=(KEY_HEADER,),
    )


def parse(body: bytes, max_results: int) -> Page:
    document = load_json(body, "brave")
    if not isinstance(document, dict) or not isinstance(document.get("query"), dict):
        raise UnexpectedAnswer("brave answered JSON without a query object")
    # Brave leaves "web" out when nothing matched.
    web = document.get("web", {"results": []})
    results = web.get("results") if isinstance(web, dict) else None
    if not isinstance(results, list):
        raise UnexpectedAnswer("brave answered JSON without web.results")
    hits: list[SearchHit] = []
    for item in results:
        hit = _hit(item)
        if hit is not None:
            hits.append(hit)
    more = document["query"].get("more_results_available") is True
    return Page(hits=hits[:max_results], more=more or len(hits) > max_results)


def _hit(item: Any) -> SearchHit | None:
    if not isinstance(item, dict):
        return None
    url = item.get("url")
    title = item.get("title")
    description = item.get("description")
    if not isinstance(url, str) or not isinstance(title, str):
        return None
    link = result_url(url)
    if link is None:
        return None
    return SearchHit(
        title=plain_text(title, MAX_TITLE_CHARS),
        url=link,
        snippet=plain_text(description, MAX_SNIPPET_CHARS) if isinstance(description, str) else "",
        sponsored=False,
    )
