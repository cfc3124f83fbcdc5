"""What every engine module provides: a request to send and a parser for its answer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from toolcalls.activities.network.search.models import SearchHit

MAX_BODY_BYTES = 2_000_000
"""The guard stops reading at 2,000,000 bytes (spec); a parser refuses anything longer again."""


class UnexpectedAnswer(Exception):
    """The provider's answer is not in the shape its engine module knows."""


class Challenge(Exception):
    """The provider asked for a human check (DuckDuckGo's anomaly page)."""


@dataclass(frozen=True)
class EngineRequest:
    """One GET to a fixed HTTPS endpoint."""

    url: str
    headers: dict[str, str]
    secret_headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Page:
    """An engine's results, in its order, at most the requested number."""

    hits: list[SearchHit] = field(default_factory=list)
    more: bool = False


def endpoint(base: str, params: dict[str, str]) -> str:
    """``base`` with ``params`` as its query string (spaces as ``%20``)."""
    return f"{base}?{urlencode(params, quote_via=quote)}"


def load_json(body: bytes, engine: str) -> Any:
    """The JSON document in ``body``, or ``UnexpectedAnswer``."""
    if len(body) > MAX_BODY_BYTES:
        raise UnexpectedAnswer(f"{engine} answered more than {MAX_BODY_BYTES} bytes")
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise UnexpectedAnswer(f"{engine} answered with malformed JSON") from None
