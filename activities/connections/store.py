"""The connection store: each principal's OAuth tokens for each provider, encrypted at rest.

One SQLite file, one row per (provider, principal). The tokens are sealed with AES-256-GCM under
the newest of the store's keys; the row's provider, principal and key id are the associated
data, so a row copied under another principal (or provider) cannot be opened: a principal never
reaches another's account through the file either. Listing shows provider, principal, scopes
and expiry, never a token.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12
_AAD = "toolcalls.connection.v1"
_SCHEMA = """
create table if not exists connections (
    provider text not null,
    principal text not null,
    key_id text not null,
    nonce blob not null,
    sealed blob not null,
    scopes text not null,
    expires_at text,
    updated_at text not null,
    primary key (provider, principal)
)
"""


class StoreError(RuntimeError):
    """A row cannot be opened (a lost key, a tampered row); the message names the row only."""


@dataclass(frozen=True)
class Tokens:
    """One principal's tokens; ``repr`` never shows them."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: datetime | None = None
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConnectionInfo:
    """A row as ``toolcalls connections list`` shows it."""

    provider: str
    principal: str
    scopes: tuple[str, ...]
    expires_at: datetime | None
    updated_at: datetime
    refreshable: bool


class ConnectionStore:
    """The SQLite file of sealed tokens (thread-safe; each call is one short transaction)."""

    def __init__(self, path: Path, keys: Sequence[tuple[str, bytes]]) -> None:
        """``keys``: ``(id, 32-byte key)`` pairs, newest first; the newest seals."""
        if not keys:
            raise ValueError("the connection store needs at least one key")
        self._keys = dict(keys)
        self._sealing = keys[0]
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("pragma busy_timeout = 5000")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, provider: str, principal: str) -> Tokens | None:
        with self._lock:
            row = self._db.execute(
                "select key_id, nonce, sealed, scopes, expires_at from connections "
                "where provider = ? and principal = ?",
                (provider, principal),
            ).fetchone()
        if row is None:
            return None
        key_id, nonce, sealed, scopes, expires = row
        key = self._keys.get(key_id)
        if key is None:
            raise StoreError(f"{provider} connection of {principal}: sealed with unknown key")
        try:
            plain = AESGCM(key).decrypt(nonce, sealed, _aad(provider, principal, key_id))
        except InvalidTag:
            raise StoreError(f"{provider} connection of {principal}: cannot be opened") from None
        data = json.loads(plain)
        return Tokens(
            access_token=data["access_token"],
            refresh_token=data.get("refresh_token"),
            expires_at=_time(expires),
            scopes=tuple(json.loads(scopes)),
        )

    def put(self, provider: str, principal: str, tokens: Tokens) -> None:
        key_id, key = self._sealing
        nonce = os.urandom(NONCE_BYTES)
        plain = json.dumps(
            {"access_token": tokens.access_token, "refresh_token": tokens.refresh_token}
        ).encode()
        sealed = AESGCM(key).encrypt(nonce, plain, _aad(provider, principal, key_id))
        expires = tokens.expires_at.isoformat() if tokens.expires_at else None
        with self._lock:
            self._db.execute(
                "insert or replace into connections values (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    provider,
                    principal,
                    key_id,
                    nonce,
                    sealed,
                    json.dumps(list(tokens.scopes)),
                    expires,
                    datetime.now(UTC).isoformat(),
                ),
            )

    def revoke(self, provider: str, principal: str) -> bool:
        """Delete the row; whether there was one."""
        with self._lock:
            cursor = self._db.execute(
                "delete from connections where provider = ? and principal = ?",
                (provider, principal),
            )
        return cursor.rowcount > 0

    def connected(self, provider: str, principal: str) -> bool:
        with self._lock:
            row = self._db.execute(
                "select 1 from connections where provider = ? and principal = ?",
                (provider, principal),
            ).fetchone()
        return row is not None

    def list(self) -> list[ConnectionInfo]:
        with self._lock:
            rows = self._db.execute(
                "select provider, principal, scopes, expires_at, updated_at, key_id, nonce, "
                "sealed from connections order by provider, principal"
            ).fetchall()
        found = []
        for provider, principal, scopes, expires, updated, *_ in rows:
            tokens = self._quietly(provider, principal)
            found.append(
                ConnectionInfo(
                    provider=provider,
                    principal=principal,
                    scopes=tuple(json.loads(scopes)),
                    expires_at=_time(expires),
                    updated_at=_time(updated) or datetime.now(UTC),
                    refreshable=tokens is not None and tokens.refresh_token is not None,
                )
            )
        return found

    def _quietly(self, provider: str, principal: str) -> Tokens | None:
        try:
            return self.get(provider, principal)
        except StoreError:
            return None


def _aad(provider: str, principal: str, key_id: str) -> bytes:
    return json.dumps([_AAD, provider, principal, key_id]).encode()


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None
