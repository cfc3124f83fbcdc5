"""What a deployment decides about the network tools."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from toolcalls.activities.network.http_paths import (
    check_env_name,
    check_header_name,
    check_header_value,
    normalise_base_url,
)

FETCH_USER_AGENT = "toolcalls-fetch/0.1"


class FetchSettings(BaseModel):
    """``fetch_url``: how it names itself. Its limits are the spec's, not the deployment's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_agent: str = Field(default=FETCH_USER_AGENT, pattern=r"^[\x20-\x7e]{1,256}$")
    """Sent with every request; some sites ask for contact details in it."""


SearchEngine = Literal["brave", "duckduckgo", "wikipedia"]
SEARCH_ENGINES: tuple[SearchEngine, ...] = ("brave", "duckduckgo", "wikipedia")
"""Every engine ``web_search`` knows, in the order its schema lists them."""
BRAVE_KEY_ENV = "BRAVE_SEARCH_API_KEY"
SEARCH_USER_AGENT = "toolcalls-web-search/0.1"
"""An honest client name: no browser is impersonated, for any engine."""
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_HEADER_TEXT = r"^[\x20-\x7e]{1,256}$"


class WebSearchSettings(BaseModel):
    """``web_search``: which engines the deployment offers and how it names itself to them.

    The Brave key never appears here: the worker reads the variable named by ``brave_key_env``
    from its environment each time a Brave search runs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    engines: tuple[SearchEngine, ...] = Field(default=SEARCH_ENGINES, min_length=1)
    """Engines a call may choose; a call naming another is refused (no fallback)."""
    brave_key_env: str = Field(default=BRAVE_KEY_ENV, pattern=_ENV_NAME)
    """The environment variable holding the Brave Search API key."""
    user_agent: str = Field(default=SEARCH_USER_AGENT, pattern=_HEADER_TEXT)
    """Sent to every engine; Wikimedia asks for contact details in it (a URL or an address)."""


HttpMethod = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
HTTP_READ_METHODS: tuple[HttpMethod, ...] = ("GET", "HEAD")
"""Methods that need ``network.read``; every other method needs ``network.write``."""
HTTP_MAX_BYTES = 1_048_576
"""Response bodies: 1 MiB by default (spec) and at most (a result leaves the worker in one
payload)."""
HTTP_REQUEST_BYTES = 1_048_576
HTTP_MAX_REQUEST_BYTES = 1_048_576
"""Request bodies: 1 MiB by default (spec) and at most. A body travels in the call's request, its
plan, its execute input and the pending approval's memo, each one payload under Temporal's 2 MB
limit; the approval preview shows at most its first 64 KiB."""
HTTP_MAX_TIMEOUT_SECONDS = 300


class HttpToolSettings(BaseModel):
    """One configured HTTP API tool (``[[http]]``): its name, fixed base URL, headers and limits.

    Header values from ``headers_from_env`` never appear here: the worker reads the named
    variables from its environment each time the tool runs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default="http_request", pattern=r"^[a-z][a-z0-9_]{0,63}$")
    """The tool's name as the model sees it; unique, and not a builtin tool's name."""
    description: str | None = Field(default=None, min_length=1, max_length=2_000)
    """What the API is for, shown to the model before the generated usage notes."""
    allow_http: bool = False
    """Permit a plain ``http://`` base URL (an internal service chosen deliberately)."""
    base_url: str = Field(min_length=1, max_length=2_048)
    """Fixed origin and base path; every call addresses a path below it."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Static headers sent with every request (not secrets: they are in the configuration)."""
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    """Header name to the environment variable holding its value, read when the tool runs."""
    allowed_methods: tuple[HttpMethod, ...] = Field(default=HTTP_READ_METHODS, min_length=1)
    timeout_seconds: float = Field(default=30, gt=0, le=HTTP_MAX_TIMEOUT_SECONDS)
    """Per request, connect to last byte."""
    max_request_bytes: int = Field(default=HTTP_REQUEST_BYTES, gt=0, le=HTTP_MAX_REQUEST_BYTES)
    """The JSON-encoded request body."""
    max_response_bytes: int = Field(default=HTTP_MAX_BYTES, gt=0, le=HTTP_MAX_BYTES)
    """The response body after content decoding."""
    idempotency_header: str | None = None
    """A header that carries the call's idempotency key on every write (non-GET/HEAD) request."""

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, url: str, info: ValidationInfo) -> str:
        return normalise_base_url(url, allow_http=bool(info.data.get("allow_http")))

    @field_validator("allowed_methods", mode="before")
    @classmethod
    def _upper(cls, methods: object) -> object:
        if isinstance(methods, list | tuple):
            return tuple(dict.fromkeys(m.upper() if isinstance(m, str) else m for m in methods))
        return methods

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            check_header_name(name)
            problem = check_header_value(value)
            if problem:
                raise ValueError(f"{name}: {problem}")
        return headers

    @field_validator("headers_from_env")
    @classmethod
    def _env_headers(cls, headers: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        static = {name.lower() for name in info.data.get("headers", {})}
        for name, variable in headers.items():
            check_header_name(name)
            check_env_name(variable)
            if name.lower() in static:
                raise ValueError(f"{name} is also in headers; give it one source")
        return headers

    @field_validator("idempotency_header")
    @classmethod
    def _idempotency_header(cls, name: str | None, info: ValidationInfo) -> str | None:
        if name is None:
            return None
        check_header_name(name)
        configured = {*info.data.get("headers", {}), *info.data.get("headers_from_env", {})}
        if name.lower() in {header.lower() for header in configured}:
            raise ValueError(f"{name} is also a configured header")
        return name

    @property
    def writes(self) -> bool:
        """Whether any allowed method needs ``network.write``."""
        return any(method not in HTTP_READ_METHODS for method in self.allowed_methods)
