"""OAuth 2.1 access tokens for ``toolcalls mcp --http`` (``[mcp.oauth]``): who a request is.

A token is a JWT (RFC 9068) and is accepted only when all of these hold:

- its header names an accepted asymmetric ``alg`` (never ``none``, never HMAC);
- its ``iss`` is a configured issuer, and its signature verifies with that issuer's key (the
  ``kid`` in its JWKS; a JWKS URL is fetched with httpx and kept for ``JWKS_CACHE_SECONDS``, and
  fetched again for an unknown ``kid`` at most every ``JWKS_REFETCH_SECONDS``; a file is read
  again when it changes);
- its ``aud`` names this server's ``resource`` (RFC 8707); ``exp`` is required, and ``exp``,
  ``nbf`` and ``iat`` hold within ``leeway_seconds``;
- it has a ``sub``.

The token's ``scope`` (a space-separated string) or ``scp`` (a list) decides which profile the
request may use (``oauth_settings.unlocked_profile``). The token itself goes no further than this
module: tools, workflows and logs get the principal ``oauth:<iss>#<sub>``, never the token.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt

from toolcalls.worker.config import ConfigError
from toolcalls.worker.mcp.oauth_settings import OAuthIssuer, OAuthSection
from toolcalls.workflows.models.approval import MAX_APPROVER_CHARS
from toolcalls.workflows.rules.identities import InvalidIdentity, canonical_identity

PRINCIPAL_KEY = "toolcalls.mcp.principal"
"""The ASGI scope key holding a request's verified principal (``oauth:<iss>#<sub>``)."""
PROFILE_KEY = "toolcalls.mcp.profile"
"""The ASGI scope key holding the profile a request's token holds it to (when it holds one)."""
JWKS_CACHE_SECONDS = 3600.0
JWKS_REFETCH_SECONDS = 10.0
JWKS_TIMEOUT_SECONDS = 10.0
MAX_JWKS_BYTES = 1_000_000
MAX_TOKEN_CHARS = 16_384
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}

log = logging.getLogger("toolcalls.mcp")


def verified_principal(scope: Mapping[str, Any]) -> str | None:
    """The verified principal of an HTTP request's ASGI ``scope``: ``oauth:<iss>#<sub>`` when an
    OAuth access token authorized it; ``None`` otherwise (stdio, or the static bearer token, whose
    user is ``[mcp] user``)."""
    principal = scope.get(PRINCIPAL_KEY)
    return principal if isinstance(principal, str) and principal else None


def principal_of(issuer: str, subject: str) -> str:
    return f"oauth:{issuer}#{subject}"


class TokenRefused(Exception):
    """A token that is not accepted; the message (one line) says why, never what it holds."""


@dataclass(frozen=True)
class Grant:
    """What a verified token gives: who it is and the scopes it carries."""

    principal: str
    scopes: tuple[str, ...]


class KeySet:
    """One issuer's signing keys (see the module docstring for when they are read again)."""

    def __init__(self, issuer: OAuthIssuer, http: httpx.AsyncClient) -> None:
        self.issuer = issuer
        self.http = http
        self.keys: dict[str | None, jwt.PyJWK] = {}
        self.loaded_at = float("-inf")
        self.file_stamp: tuple[float, int] | None = None
        self.lock = asyncio.Lock()

    async def load(self) -> None:
        """Read the keys now.

        Raises:
            ConfigError: the file or URL holds no usable key set, or cannot be read.
        """
        async with self.lock:
            await self._load()

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The key named ``kid`` (or the only key, for a token without one)."""
        found = self._find(kid)
        if found is not None and not self._stale():
            return found
        async with self.lock:
            if self._stale() or (found is None and self._may_refetch()):
                try:
                    await self._load()
                except ConfigError as exc:
                    log.warning("%s", exc)
            return self._find(kid)

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None and len(self.keys) == 1:
            return next(iter(self.keys.values()))
        return self.keys.get(kid) if kid is not None else None

    def _stale(self) -> bool:
        if self.issuer.jwks_file is not None:
            return self._stamp() != self.file_stamp
        return time.monotonic() - self.loaded_at > JWKS_CACHE_SECONDS

    def _may_refetch(self) -> bool:
        return time.monotonic() - self.loaded_at > JWKS_REFETCH_SECONDS

    def _stamp(self) -> tuple[float, int] | None:
        assert self.issuer.jwks_file is not None
        try:
            found = self.issuer.jwks_file.stat()
        except OSError:
            return None
        return found.st_mtime, found.st_size

    async def _load(self) -> None:
        where = self.issuer.jwks_file or self.issuer.jwks_url
        self.loaded_at = time.monotonic()
        if self.issuer.jwks_file is not None:
            self.file_stamp = self._stamp()
            text = _read_file(self.issuer.jwks_file)
        else:
            assert self.issuer.jwks_url is not None
            text = await self._fetch(self.issuer.jwks_url)
        try:
            keys = jwt.PyJWKSet.from_dict(json.loads(text)).keys
        except (ValueError, TypeError, AttributeError, jwt.PyJWKSetError) as exc:
            raise ConfigError(f"mcp.oauth: {where}: not a usable JWKS: {exc}") from None
        self.keys = {
            key.key_id: key for key in keys if getattr(key, "public_key_use", None) in (None, "sig")
        }

    async def _fetch(self, url: str) -> str:
        try:
            response = await self.http.get(url, timeout=JWKS_TIMEOUT_SECONDS)
        except httpx.HTTPError as exc:
            raise ConfigError(f"mcp.oauth: {url}: cannot fetch the JWKS: {exc}") from None
        if response.status_code != 200:
            raise ConfigError(f"mcp.oauth: {url}: the JWKS answered {response.status_code}")
        if len(response.content) > MAX_JWKS_BYTES:
            raise ConfigError(f"mcp.oauth: {url}: the JWKS is over {MAX_JWKS_BYTES} bytes")
        return response.text


def _read_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"mcp.oauth: {path}: cannot read the JWKS: {exc}") from None


class Verifier:
    """Checks access tokens against ``[mcp.oauth]`` (see the module docstring)."""

    def __init__(self, settings: OAuthSection, http: httpx.AsyncClient | None = None) -> None:
        self.settings = settings
        self.http = http or httpx.AsyncClient(follow_redirects=False)
        self.keysets = {issuer.issuer: KeySet(issuer, self.http) for issuer in settings.issuers}

    async def start(self) -> None:
        """Read every key set once: a bad file stops the server, an unreachable URL is a
        warning (it is fetched again when a token needs it).

        Raises:
            ConfigError: a JWKS file cannot be read or holds no usable key.
        """
        for keyset in self.keysets.values():
            try:
                await keyset.load()
            except ConfigError as exc:
                if keyset.issuer.jwks_file is not None:
                    raise
                log.warning("%s (fetched again when a token needs it)", exc)

    async def verify(self, token: str) -> Grant:
        """The grant of ``token``.

        Raises:
            TokenRefused: the token is not accepted (the message says why).
        """
        if len(token) > MAX_TOKEN_CHARS:
            raise TokenRefused("the token is too long")
        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise TokenRefused("not a JWT access token") from None
        alg = header.get("alg")
        if alg not in self.settings.algorithms:
            raise TokenRefused(f"the signature algorithm {str(alg)[:20]!r} is not accepted")
        issuer = claims.get("iss")
        keyset = self.keysets.get(issuer) if isinstance(issuer, str) else None
        if keyset is None or not isinstance(issuer, str):
            raise TokenRefused("the token's issuer is not accepted")
        kid = header.get("kid")
        key = await keyset.key(kid if isinstance(kid, str) else None)
        if key is None:
            raise TokenRefused("no key of the issuer signed the token")
        if not _fits(key, alg):
            raise TokenRefused(f"the issuer's key is not a {alg} key")
        try:
            verified = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.settings.resource,
                issuer=issuer,
                leeway=self.settings.leeway_seconds,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("the token is not for this resource (aud)") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("the token is not valid yet") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("the token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefused(f"the token has no {exc.claim!r} claim") from None
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"the token is not accepted: {exc}") from None
        subject = verified.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            raise TokenRefused("the token names no subject")
        principal = principal_of(issuer, subject)
        try:  # it is recorded as who asked, and as who answered or decided
            canonical_identity(principal)
        except InvalidIdentity:
            raise TokenRefused(
                f"the token's issuer and subject make no requester name (at most "
                f"{MAX_APPROVER_CHARS} characters, nothing invisible)"
            ) from None
        return Grant(principal, _scopes(verified))

    async def aclose(self) -> None:
        await self.http.aclose()


def _fits(key: jwt.PyJWK, alg: str) -> bool:
    """Whether ``key`` is a key of ``alg``'s kind (and of ``alg`` itself, when it names one)."""
    data = getattr(key, "_jwk_data", {})  # the JWK as given: PyJWK infers an alg it lacks
    named = data.get("alg")
    if isinstance(named, str) and named != alg:
        return False
    return bool(key.key_type == _KEY_TYPES.get(alg[:2]))


def _scopes(claims: Mapping[str, Any]) -> tuple[str, ...]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return tuple(scope.split())
    listed = claims.get("scp")
    if isinstance(listed, list):
        return tuple(item for item in listed if isinstance(item, str))
    if isinstance(listed, str):
        return tuple(listed.split())
    return ()


def metadata_url(resource: str) -> str:
    """Where this resource's metadata is (RFC 9728 section 3.1): the well-known path inserted
    between the resource's host and its path."""
    scheme, _, rest = resource.partition("://")
    host, slash, path = rest.partition("/")
    path = path.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    suffix = f"/{path}" if slash and path else ""
    return f"{scheme}://{host}{WELL_KNOWN}{suffix}"


WELL_KNOWN = "/.well-known/oauth-protected-resource"


def resource_metadata(settings: OAuthSection) -> dict[str, Any]:
    """The protected-resource metadata document (RFC 9728)."""
    return {
        "resource": settings.resource,
        "authorization_servers": [issuer.issuer for issuer in settings.issuers],
        "scopes_supported": list(settings.scopes),
        "bearer_methods_supported": ["header"],
        "resource_name": "toolcalls",
    }
