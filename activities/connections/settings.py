"""What a deployment decides about per-principal connections: one ``[connections]`` table.

Secrets are never values here: ``client_secret_env`` names the variable holding an OAuth
client's secret, and ``key_env`` / ``key_file`` where the store's encryption keys are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolcalls.activities.hosts import is_loopback

GOOGLE_AUTHORIZE_URL = "https://accounts.google.com/o/oauth2/v2/auth"
GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"
MICROSOFT_AUTHORIZE_URL = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize"
MICROSOFT_TOKEN_URL = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"
DEFAULT_SCOPES = {
    "google": (
        "https://www.googleapis.com/auth/calendar.events",
        "https://www.googleapis.com/auth/gmail.modify",
    ),
    "microsoft": ("offline_access", "Calendars.ReadWrite", "Mail.ReadWrite", "Mail.Send"),
}
"""What the calendar and email tools use; Microsoft grants a refresh token for
``offline_access`` only."""
DEFAULT_CONSENT_TIMEOUT_SECONDS = 3600.0
MAX_CONSENT_TIMEOUT_SECONDS = 7 * 24 * 3600.0
STORE_FILE = "connections.sqlite3"
KEY_FILE = "connections.keys"
CALLBACK_PATH = "/connections/callback"
START_PATH = "/connections/start"
ProviderName = Literal["google", "microsoft"]
BACKEND_PROVIDERS = {"google": "google", "gmail": "google", "outlook": "microsoft"}
"""Which provider a built-in calendar or email backend's connection must name."""


class ProviderSettings(BaseModel):
    """``[[connections.providers]]``: one OAuth client the deployment registered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ProviderName
    client_id: str = Field(min_length=1, max_length=512)
    client_secret_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    """The variable holding the client secret; none for a public client (PKCE only)."""
    scopes: list[str] | None = None
    """Default: ``DEFAULT_SCOPES`` of the provider."""
    tenant: str = Field(default="common", pattern=r"^[A-Za-z0-9.-]{1,100}$")
    """Microsoft: ``common``, ``organizations``, or a tenant id or domain."""
    authorize_url: str | None = None
    token_url: str | None = None
    """Default: the provider's documented endpoints; a test may point them at a loopback
    server."""

    @field_validator("authorize_url", "token_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            problem = url_problem(value)
            if problem:
                raise ValueError(problem)
        return value

    @property
    def authorize_endpoint(self) -> str:
        if self.authorize_url:
            return self.authorize_url
        if self.name == "google":
            return GOOGLE_AUTHORIZE_URL
        return MICROSOFT_AUTHORIZE_URL.format(tenant=self.tenant)

    @property
    def token_endpoint(self) -> str:
        if self.token_url:
            return self.token_url
        if self.name == "google":
            return GOOGLE_TOKEN_URL
        return MICROSOFT_TOKEN_URL.format(tenant=self.tenant)

    @property
    def scope_list(self) -> list[str]:
        return list(self.scopes if self.scopes is not None else DEFAULT_SCOPES[self.name])


class ConnectionsSettings(BaseModel):
    """``[connections]``: the store of principals' tokens and the OAuth clients."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store: Path | None = None
    """The SQLite file; default ``<state_dir>/connections.sqlite3``."""
    key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    key_file: Path | None = None
    """``id=base64key`` lines, newest first (as ``[codec]`` keys); neither: a key made once in
    ``<state_dir>/connections.keys``."""
    public_url: str | None = None
    """The inbox's base URL as people's browsers reach it; the redirect URI registered with
    each client is this plus ``/connections/callback``."""
    consent_timeout_seconds: float | None = Field(
        default=DEFAULT_CONSENT_TIMEOUT_SECONDS, gt=0, le=MAX_CONSENT_TIMEOUT_SECONDS
    )
    """How long a call waits for its principal to connect."""
    providers: list[ProviderSettings] = Field(default_factory=list)
    inbox_user_must_match: bool = True
    """The consent pages serve only a person signed in to the inbox under the principal's id:
    whoever consents chooses the account that principal's calls act on."""

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = url_problem(value)
        if problem:
            raise ValueError(problem)
        return value.rstrip("/")

    @model_validator(mode="after")
    def _checked(self) -> ConnectionsSettings:
        names = [provider.name for provider in self.providers]
        for name in set(names):
            if names.count(name) > 1:
                raise ValueError(f"providers: {name} is configured twice")
        if self.key_env is not None and self.key_file is not None:
            raise ValueError("set key_env or key_file, not both")
        if self.providers and self.public_url is None:
            raise ValueError("public_url: the providers need the inbox's public url")
        return self

    def provider(self, name: str) -> ProviderSettings | None:
        return next((p for p in self.providers if p.name == name), None)

    @property
    def redirect_uri(self) -> str:
        return f"{self.public_url}{CALLBACK_PATH}"


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an endpoint: https only, plain http on loopback only."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return f"{url!r} is not a valid url"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return f"{url!r} is not an http(s) url"
    if parsed.userinfo or parsed.fragment:
        return f"{url!r}: no credentials or fragment in the url"
    if parsed.scheme == "http" and not is_loopback(parsed.host):
        return f"{url!r}: plain http is allowed only for a loopback address; use https"
    return None
