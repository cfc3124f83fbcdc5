"""``[mcp.oauth]``: streamable HTTP as an OAuth 2.1 protected resource.

The server accepts JWT access tokens issued by the configured authorization servers for this
resource (RFC 8707: the token's ``aud`` names ``resource``), beside the static bearer token of
``[mcp] token_env`` when that is also set. ``scopes`` maps each scope a token may carry to the
tool profile it unlocks (``"*"``: every tool the server offers). Keys come from each issuer's JWKS
(a URL or a file); only asymmetric signature algorithms are accepted, so a public key can never be
used as an HMAC secret and an unsigned token (``alg: none``) is never one.

Loads without the ``mcp`` extra, like the ``[mcp]`` section; the profiles the scopes name are
checked against ``[profiles]`` with the rest of the configuration (``scope_problems``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolcalls.activities.hosts import is_loopback

ALL_TOOLS = "*"
"""The profile a scope names to unlock every tool the server offers."""
ASYMMETRIC_ALGORITHMS = (
    *("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    *("ES256", "ES384", "ES512", "EdDSA"),
)
DEFAULT_ALGORITHMS = ("RS256", "ES256")
MAX_LEEWAY_SECONDS = 300.0
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")
"""A scope token (RFC 6749 section 3.3): printable ASCII without space, quote or backslash."""


def _url(value: str, what: str, *, fragment_ok: bool = False) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{value!r}: {what} must be an absolute https URL")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError(f"{value!r}: {what} must use https (http only on a loopback host)")
    if parts.fragment and not fragment_ok:
        raise ValueError(f"{value!r}: {what} cannot hold a fragment")
    return value


class OAuthIssuer(BaseModel):
    """An authorization server whose access tokens the server accepts, and where its keys are."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    issuer: str = Field(min_length=1)
    """The ``iss`` its tokens carry, exactly (its issuer identifier, a URL)."""
    jwks_url: str | None = None
    """Its JSON Web Key Set, fetched when needed and kept; fetched again for an unknown ``kid``."""
    jwks_file: Path | None = None
    """Its JSON Web Key Set in a file, read at start and again when the file changes."""

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str) -> str:
        return _url(value, "an issuer")

    @field_validator("jwks_url")
    @classmethod
    def _jwks_url(cls, value: str | None) -> str | None:
        return None if value is None else _url(value, "jwks_url")

    @model_validator(mode="after")
    def _one_source(self) -> OAuthIssuer:
        if (self.jwks_url is None) == (self.jwks_file is None):
            raise ValueError(f"issuer {self.issuer!r}: give one of jwks_url or jwks_file")
        return self


class OAuthSection(BaseModel):
    """``[mcp.oauth]``: see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    resource: str
    """This server's resource identifier (RFC 8707/9728): the public URL of its MCP endpoint,
    which every accepted token's ``aud`` must name."""
    issuers: list[OAuthIssuer] = Field(min_length=1)
    scopes: dict[str, str] = Field(min_length=1)
    """Scope -> the profile it unlocks (``"*"`` for every tool the server offers)."""
    algorithms: list[str] = Field(default_factory=lambda: list(DEFAULT_ALGORITHMS), min_length=1)
    """The signature algorithms accepted (asymmetric ones only)."""
    leeway_seconds: float = Field(default=30.0, ge=0, le=MAX_LEEWAY_SECONDS)
    """Clock skew allowed on ``exp``, ``nbf`` and ``iat``."""

    @field_validator("resource")
    @classmethod
    def _resource(cls, value: str) -> str:
        return _url(value, "resource")

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in ASYMMETRIC_ALGORITHMS:
                raise ValueError(
                    f"{name!r} is not accepted: use asymmetric ones "
                    f"({', '.join(ASYMMETRIC_ALGORITHMS)}); never none or HS*"
                )
        return names

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, scopes: dict[str, str]) -> dict[str, str]:
        for scope, profile in scopes.items():
            if not _SCOPE_TOKEN.fullmatch(scope):
                raise ValueError(f"{scope!r} is not a scope (printable ASCII, no spaces or quotes)")
            if not profile:
                raise ValueError(f"{scope!r} names no profile (a profile, or '*' for all tools)")
        return scopes

    @field_validator("issuers")
    @classmethod
    def _distinct(cls, issuers: list[OAuthIssuer]) -> list[OAuthIssuer]:
        seen: set[str] = set()
        for issuer in issuers:
            if issuer.issuer in seen:
                raise ValueError(f"issuer {issuer.issuer!r} is listed twice")
            seen.add(issuer.issuer)
        return issuers

    def scopes_for(self, profile: str | None) -> list[str]:
        """The scopes any one of which unlocks ``profile`` (``None``: every tool)."""
        wanted = {ALL_TOOLS} if profile is None else {profile, ALL_TOOLS}
        return [scope for scope, unlocked in self.scopes.items() if unlocked in wanted]


def scope_problems(oauth: OAuthSection | None, profiles: Iterable[str]) -> list[str]:
    """``mcp.oauth.scopes`` entries that name a profile the deployment lacks."""
    if oauth is None:
        return []
    known = set(profiles)
    return [
        f"mcp.oauth.scopes.{scope}: no profile {profile!r}; profiles: "
        f"{', '.join(sorted(known)) or 'none'} (or '*' for every tool)"
        for scope, profile in oauth.scopes.items()
        if profile != ALL_TOOLS and profile not in known
    ]


def unlocked_profile(
    oauth: OAuthSection, granted: Iterable[str], served: str | None
) -> tuple[bool, str | None]:
    """Whether the ``granted`` scopes reach what the server serves, and the profile the request
    is held to: the server's profile when it has one; otherwise every tool for a ``"*"`` scope,
    else the profile of the first granted scope in ``scopes`` order."""
    given = set(granted)
    held: Mapping[str, str] = {
        scope: profile for scope, profile in oauth.scopes.items() if scope in given
    }
    if served is not None:
        return any(profile in (served, ALL_TOOLS) for profile in held.values()), served
    if not held:
        return False, None
    if ALL_TOOLS in held.values():
        return True, None
    return True, next(iter(held.values()))
