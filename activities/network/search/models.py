"""``web_search`` arguments and its one result shape, whatever the engine."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    StringConstraints,
    ValidationInfo,
    create_model,
    field_validator,
)

from toolcalls.activities.base import ToolArgs, ToolResult
from toolcalls.activities.network.settings import SEARCH_ENGINES, SearchEngine

MAX_QUERY_CHARS = 400
MAX_QUERY_WORDS = 50
"""A query is 1-400 characters once stripped, in at most 50 whitespace-separated words (spec)."""
MAX_RESULTS = 10
DEFAULT_RESULTS = 5
"""``max_results`` is 1-10, default 5 (spec)."""
MAX_TITLE_CHARS = 300
MAX_SNIPPET_CHARS = 1_000
MAX_DESCRIPTION_CHARS = 300
MAX_URL_CHARS = 2_048
"""Text a result carries into the model's context; longer titles and snippets are cut (with an
ellipsis), longer URLs drop the result. Ten results stay under 40 KB of JSON."""

Engine = SearchEngine
Freshness = Literal["any", "day", "week", "month", "year"]


def _query(text: str) -> str:
    words = text.split()
    if len(words) > MAX_QUERY_WORDS:
        raise ValueError(f"has {len(words)} words; the limit is {MAX_QUERY_WORDS}")
    if any(unicodedata.category(ch) == "Cc" for word in words for ch in word):
        raise ValueError("contains control characters")
    # Line breaks and tabs carry no meaning to a search engine; one space between words keeps
    # the query (and the digest the approval is bound to) exactly what is sent.
    return " ".join(words)


Query = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS),
    AfterValidator(_query),
]


ENGINE_NOTES: dict[Engine, str] = {
    "brave": "needs the deployment's Brave key",
    "duckduckgo": "keyless, best effort",
    "wikipedia": "keyless, English Wikipedia articles",
}
"""What the model is told of each engine it may choose."""


def engine_listing(engines: Sequence[Engine], notes: Mapping[Engine, str]) -> str:
    """``"brave (the default; ...), duckduckgo (...) or wikipedia (...)"``: the first is the
    default (a single engine is just the engine)."""
    named = [
        f"{engine} ({'the default; ' if index == 0 and len(engines) > 1 else ''}{notes[engine]})"
        for index, engine in enumerate(engines)
    ]
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"


def _engine_description(engines: Sequence[Engine]) -> str:
    listing = engine_listing(engines, ENGINE_NOTES)
    return f"{listing}. Never a silent fallback." if len(engines) > 1 else f"{listing}."


def _freshness_description(engines: Sequence[Engine]) -> str:
    only = "; wikipedia: any only" if "wikipedia" in engines else ""
    return f"Only results from the last day, week, month or year{only}."


class WebSearchArgs(ToolArgs):
    """Arguments of a web search: the query, the engine, the number of results, freshness."""

    query: Query = Field(
        description="What to search for: 1-400 characters, at most 50 words.",
    )
    max_results: int = Field(
        default=DEFAULT_RESULTS, ge=1, le=MAX_RESULTS, description="Results to return, 1-10."
    )
    # engine is declared before freshness so that freshness can be checked against it, and a
    # refusal names freshness as the argument to change.
    engine: Engine = Field(
        default=SEARCH_ENGINES[0], description=_engine_description(SEARCH_ENGINES)
    )
    freshness: Freshness = Field(default="any", description=_freshness_description(SEARCH_ENGINES))

    @field_validator("freshness")
    @classmethod
    def _engine_supports_freshness(cls, freshness: str, info: ValidationInfo) -> str:
        if info.data.get("engine") == "wikipedia" and freshness != "any":
            raise ValueError('engine "wikipedia" supports only "any"')
        return freshness


def web_search_args(engines: Sequence[Engine]) -> type[WebSearchArgs]:
    """``WebSearchArgs`` as a deployment offering ``engines`` advertises them: ``engine`` is one
    of those, the first by default, and nothing names an engine it does not offer."""
    engines = tuple(engines)
    return WebSearchArgs if engines == SEARCH_ENGINES else _offering(engines)


@functools.cache
def _offering(engines: tuple[Engine, ...]) -> type[WebSearchArgs]:
    offered: Any = Literal[engines]
    return create_model(
        f"WebSearchArgs{''.join(engine.title() for engine in engines)}",
        __base__=WebSearchArgs,
        engine=(offered, Field(default=engines[0], description=_engine_description(engines))),
        freshness=(
            Freshness,
            Field(default="any", description=_freshness_description(engines)),
        ),
    )


class SearchHit(ToolResult):
    """One result, ranked as the engine ranked it."""

    title: str
    url: str
    snippet: str
    sponsored: bool
    """An advertisement (DuckDuckGo marks its ads; they keep their place and click URL)."""
    description: str | None = None
    """Wikipedia's short description of the article, when it has one."""


class WebSearchResult(ToolResult):
    query: str
    engine: Engine
    results: list[SearchHit]
    more_results_available: bool
    untrusted_content: Literal[True] = True
    """Titles, URLs and snippets come from third parties: data, never instructions."""
