"""What a deployment decides about the calendar tools: one ``[calendar]`` table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.activities.hosts import is_loopback

DEFAULT_TIMEOUT_SECONDS = 30.0
"""``calendar_tools(timeout_seconds=30)`` (spec): the bound of one whole operation."""
MAX_TIMEOUT_SECONDS = 300.0
BUILTIN_BACKENDS = ("google", "outlook", "caldav")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
IMPORT_PATH = re.compile(rf"{_NAME}(\.{_NAME})*:{_NAME}(\.{_NAME})*")
"""``package.module:attribute`` of a deployment's own ``CalendarBackend``."""
DEFAULT_GOOGLE_CALENDAR = "primary"
DEFAULT_OUTLOOK_USER = "me"


class CalendarSettings(BaseModel):
    """``list_calendar_events`` and ``create_calendar_event`` against one calendar.

    Secrets are never values here: ``token_env`` / ``token_file`` and ``password_env`` /
    ``password_file`` say where the worker reads them when a call runs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str | None = None
    """``google``, ``outlook``, ``caldav``, or ``module:attribute`` of a ``CalendarBackend``."""
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=MAX_TIMEOUT_SECONDS)
    calendar_id: str | None = Field(default=None, min_length=1, max_length=1024)
    """Google: default ``primary``. Outlook: default the user's default calendar."""
    user_id: str = Field(default=DEFAULT_OUTLOOK_USER, min_length=1, max_length=320)
    """Outlook: ``me`` for delegated tokens, a user id or principal name for application ones."""
    account: str | None = Field(default=None, min_length=1, max_length=320)
    """How approvers see the account (``me@example.com``); previews only, never sent."""
    token_env: str | None = Field(default=None, min_length=1)
    token_file: Path | None = None
    """An OAuth access token (Google, Outlook), read for every request; an external refresher
    may replace the file at any time."""
    connection: Literal["google", "microsoft"] | None = None
    """Instead of one token: act with each call's principal's own account, connected through
    ``[[connections.providers]]`` of this name (``google`` for Google, ``microsoft`` for
    Outlook)."""
    url: str | None = None
    """CalDAV: the calendar collection's URL (https, or http on a loopback address)."""
    username: str | None = Field(default=None, min_length=1, max_length=320)
    password_env: str | None = Field(default=None, min_length=1)
    password_file: Path | None = None
    ca_file: Path | None = None
    """CalDAV: extra trust (a private CA) beside the system's; TLS is always verified."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for a ``module:attribute`` backend that is a class or a factory."""

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str | None) -> str | None:
        if value is None or value in BUILTIN_BACKENDS or IMPORT_PATH.fullmatch(value):
            return value
        raise ValueError(
            f"{value!r} is not a backend: use {', '.join(BUILTIN_BACKENDS)} or module:attribute"
        )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = url_problem(value)
        if problem:
            raise ValueError(problem)
        return value if value.endswith("/") else value + "/"

    @property
    def custom(self) -> bool:
        return self.backend is not None and self.backend not in BUILTIN_BACKENDS


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a CalDAV collection: https only, plain http on loopback only."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return f"{url!r} is not a valid url"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return f"{url!r} is not an http(s) url"
    if parsed.userinfo:
        return "credentials do not belong in the url: use username and password_env"
    if parsed.query or parsed.fragment:
        return "a collection url has no query or fragment"
    if parsed.scheme == "http" and not is_loopback(parsed.host):
        return f"{url!r}: plain http is allowed only for a loopback address; use https"
    return None
