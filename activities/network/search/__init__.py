"""``web_search`` over three explicit engines: Brave (keyed API), DuckDuckGo HTML, Wikipedia REST.

``tools`` holds the family and its error mapping; ``brave``, ``duckduckgo`` and ``wikipedia`` each
build their engine's request and parse its answer into the one result shape of ``models``;
``text`` makes provider text and links safe to pass on. Every request goes through
``toolcalls.activities.network.guard``.
"""

from toolcalls.activities.network.search.models import (
    SearchHit,
    WebSearchArgs,
    WebSearchResult,
    engine_listing,
    web_search_args,
)
from toolcalls.activities.network.search.tools import WebSearchTools

__all__ = [
    "SearchHit",
    "WebSearchArgs",
    "WebSearchResult",
    "WebSearchTools",
    "engine_listing",
    "web_search_args",
]
