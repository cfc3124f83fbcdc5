"""A response as a result: selected headers, and the body as JSON, text or base64, cut to fit."""

from __future__ import annotations

import base64
import codecs
import json
from typing import cast

import httpx
from pydantic import JsonValue

from toolcalls.activities.network.http_api.models import BodyEncoding, HttpResponseResult
from toolcalls.activities.storage.values import check_value

RESULT_HEADERS = (
    "content-type",
    "content-language",
    "content-disposition",
    "content-range",
    "location",
    "retry-after",
    "etag",
    "last-modified",
    "cache-control",
    "expires",
    "link",
    "allow",
    "www-authenticate",
    "x-request-id",
    "request-id",
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
)
"""Response headers a result carries; never ``set-cookie``, never framing or encoding headers."""
MAX_HEADER_VALUE_CHARS = 1_000
MAX_RESULT_BODY_BYTES = 960_000
"""The body as JSON text in the result: with the URL and headers it stays under the 1 MiB payload
cap, so a 1 MiB binary body (1.4 MB in base64) or heavily escaped text is cut, not refused."""


def build_result(
    method: str, url: str, status: int, headers: httpx.Headers, body: bytes
) -> HttpResponseResult:
    """The result: selected headers and the body as JSON, text or base64, cut to fit."""
    selected = {
        name: value[:MAX_HEADER_VALUE_CHARS]
        for name in RESULT_HEADERS
        if (value := headers.get(name)) is not None
    }
    value, encoding, truncated = _body(headers.get("content-type", ""), body)
    return HttpResponseResult(
        method=method,
        url=url,
        status_code=status,
        headers=selected,
        body=value,
        body_encoding=encoding,
        body_bytes=len(body),
        truncated=truncated,
    )


def _body(content_type: str, body: bytes) -> tuple[JsonValue, BodyEncoding, bool]:
    media, _, params = content_type.partition(";")
    media = media.strip().lower()
    charset = _charset(params)
    textual = media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+xml", "+yaml"))
    is_json = media == "application/json" or media.endswith("+json")
    text: str | None = None
    if is_json or textual or not media:
        try:
            text = body.decode(charset or "utf-8")
        except (UnicodeDecodeError, LookupError):
            text = None
    if is_json and text:
        parsed = _parse_json(text)
        if parsed is not None and _json_size(parsed) <= MAX_RESULT_BODY_BYTES:
            return parsed[0], "json", False
    if text is not None:
        cut = _fit_text(text)
        return cut, "text", len(cut) < len(text)
    raw = body[: MAX_RESULT_BODY_BYTES // 4 * 3]
    return base64.b64encode(raw).decode("ascii"), "base64", len(raw) < len(body)


_TEXT_TYPES = frozenset(
    {
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-www-form-urlencoded",
        "application/yaml",
        "application/x-yaml",
        "application/x-ndjson",
        "application/graphql",
    }
)


def _charset(params: str) -> str | None:
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            name = value.strip().strip('"')
            try:
                return codecs.lookup(name).name
            except LookupError:
                return None
    return None


def _parse_json(text: str) -> tuple[JsonValue] | None:
    """The parsed value (in a 1-tuple, so JSON null is not "no value"), or None."""
    try:
        value = json.loads(text)
        check_value(value)
    except (ValueError, RecursionError):
        return None
    return (cast(JsonValue, value),)


def _json_size(parsed: tuple[JsonValue]) -> int:
    return len(json.dumps(parsed[0], ensure_ascii=False).encode())


def _fit_text(text: str) -> str:
    """``text``, or its longest prefix whose JSON string form fits ``MAX_RESULT_BODY_BYTES``."""
    size = len(json.dumps(text, ensure_ascii=False).encode())
    while size > MAX_RESULT_BODY_BYTES:
        text = text[: max(0, int(len(text) * MAX_RESULT_BODY_BYTES / size) - 16)]
        size = len(json.dumps(text, ensure_ascii=False).encode())
    return text
