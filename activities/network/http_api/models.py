"""The arguments and result of every configured HTTP API tool."""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BeforeValidator,
    Field,
    JsonValue,
    ValidationInfo,
    create_model,
    field_validator,
)

from toolcalls.activities.base import ToolArgs, ToolResult
from toolcalls.activities.network.http_paths import MAX_PATH_CHARS, MAX_QUERY_PARAMS, check_path
from toolcalls.activities.network.settings import (
    HTTP_READ_METHODS,
    HTTP_REQUEST_BYTES,
    HttpToolSettings,
)
from toolcalls.activities.storage.values import JsonText

BodyEncoding = Literal["json", "text", "base64"]


class QueryParameter(ToolArgs):
    """A query parameter: a name and its string value."""

    name: str = Field(min_length=1, description="Parameter name, nonempty.")
    value: str = Field(description="Parameter value, a string.")


def _query_pairs(query: Any) -> Any:
    """A JSON object of names to values (the spec's form) as the list of pairs; a list passes."""
    if isinstance(query, dict):
        return [{"name": name, "value": value} for name, value in query.items()]
    return query


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
    query: Annotated[list[QueryParameter], BeforeValidator(_query_pairs)] | None = Field(
        default=None,
        max_length=MAX_QUERY_PARAMS,
        description=(
            'Query parameters as {"name", "value"} string pairs, sent in this order; a name may '
            "repeat."
        ),
    )
    body: JsonText = Field(
        default=None,
        description=(
            'JSON request body as JSON text ({"a": 1}, [1, 2], or "text" for a string, quotes '
            "included), sent as application/json; null sends none. Not allowed with GET or HEAD."
        ),
    )

    @field_validator("path")
    @classmethod
    def _path(cls, path: str) -> str:
        return check_path(path)

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, method: object) -> object:
        return method.upper() if isinstance(method, str) else method

    @field_validator("body")
    @classmethod
    def _body(cls, body: JsonValue, info: ValidationInfo) -> JsonValue:
        # JsonText has already refused anything but JSON data at most 64 levels deep.
        if body is None:
            return None
        if info.data.get("method") in HTTP_READ_METHODS:
            raise ValueError(f"{info.data['method']} requests have no body; use query")
        size = len(encode_body(body))
        if size > cls.max_request_bytes:
            raise ValueError(f"is {size} bytes as JSON; the limit is {cls.max_request_bytes}")
        return body

    @property
    def query_pairs(self) -> list[tuple[str, str]]:
        """The query parameters in order, ``[]`` for none."""
        return [(param.name, param.value) for param in self.query or ()]


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
