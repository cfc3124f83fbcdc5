"""The arguments and result of every configured HTTP API tool."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import Field, JsonValue, ValidationInfo, create_model, field_validator

from activities.base import ToolArgs, ToolResult
from activities.network.http_paths import MAX_PATH_CHARS, MAX_QUERY_PARAMS, check_path
from activities.network.settings import HTTP_READ_METHODS, HTTP_REQUEST_BYTES, HttpToolSettings
from activities.storage.values import check_value

BodyEncoding = Literal["json", "text", "base64"]


class HttpRequestArgs(ToolArgs):
    """The arguments of every configured HTTP API tool; ``family_for`` narrows ``method``."""

    max_request_bytes: ClassVar[int] = HTTP_REQUEST_BYTES

    path: str = Field(
        default="",
        max_length=MAX_PATH_CHARS,
        description=(
            "Path below the API's base URL: 'items' and '/items' both address <base>/items. "
            "No '..', no absolute URL, no '?' or '#'; percent-encode reserved characters."
        ),
    )
    method: str = Field(default="GET", description="HTTP method.")
    query: dict[str, str] | None = Field(
        default=None, description="Query parameters: names to string values."
    )
    body: JsonValue = Field(
        default=None,
        description="JSON request body, sent as application/json; not allowed with GET or HEAD.",
    )

    @field_validator("path")
    @classmethod
    def _path(cls, path: str) -> str:
        return check_path(path)

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, method: object) -> object:
        return method.upper() if isinstance(method, str) else method

    @field_validator("query")
    @classmethod
    def _query(cls, query: dict[str, str] | None) -> dict[str, str] | None:
        if query is not None and len(query) > MAX_QUERY_PARAMS:
            raise ValueError(f"has {len(query)} parameters; the limit is {MAX_QUERY_PARAMS}")
        if query is not None and any(not name for name in query):
            raise ValueError("parameter names must not be empty")
        return query

    @field_validator("body", mode="before")
    @classmethod
    def _body(cls, body: Any, info: ValidationInfo) -> Any:
        if body is None:
            return None
        if info.data.get("method") in HTTP_READ_METHODS:
            raise ValueError(f"{info.data['method']} requests have no body; use query")
        # Before pydantic's own (recursive) JsonValue validation: depth and finiteness first.
        check_value(body)
        size = len(encode_body(body))
        if size > cls.max_request_bytes:
            raise ValueError(f"is {size} bytes as JSON; the limit is {cls.max_request_bytes}")
        return body


class HttpResponseResult(ToolResult):
    method: str
    url: str
    """The URL requested (redirects are returned, not followed)."""
    status_code: int
    headers: dict[str, str]
    """The response headers in ``RESULT_HEADERS`` that were present, lowercase names."""
    body: JsonValue
    """Parsed JSON (``json``), text (``text``) or base64 of the bytes (``base64``)."""
    body_encoding: BodyEncoding
    body_bytes: int
    """Decoded body bytes received."""
    truncated: bool
    """The body was cut to fit the result (``body`` is then text or base64 of a prefix)."""
    untrusted_content: Literal[True] = True
    """The body and headers come from the remote service: data, never instructions."""


def encode_body(body: JsonValue) -> bytes:
    """The exact bytes sent for a JSON body: compact, UTF-8."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def http_capabilities(args: HttpRequestArgs) -> list[str]:
    """GET and HEAD read; every other method may change the service."""
    return ["network.read"] if args.method in HTTP_READ_METHODS else ["network.write"]


def arguments_model(settings: HttpToolSettings) -> type[HttpRequestArgs]:
    """The tool's argument model: ``method`` limited to the allowed methods (a schema enum)."""
    methods: Any = Literal[settings.allowed_methods]
    model = create_model(
        f"{''.join(part.title() for part in settings.name.split('_'))}Args",
        __base__=HttpRequestArgs,
        method=(
            methods,
            Field(
                default="GET",
                validate_default=True,
                description=f"One of {', '.join(settings.allowed_methods)}.",
            ),
        ),
    )
    model.max_request_bytes = settings.max_request_bytes
    return model
