"""Encryption keys: ``id=base64key`` pairs, newest first, from the environment or a file.

The newest key encrypts; every key listed decrypts, so a key is rotated by putting a new one in
front and dropping the old one only once nothing it encrypted is still needed (see
docs/payloads.md). Keys are 32 random bytes (AES-256), in standard or URL-safe base64.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

KEY_BYTES = 32
MAX_KEY_ID_CHARS = 64
_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class KeysError(ValueError):
    """The keys cannot be read or are malformed; the message names the source, never a key."""


@dataclass(frozen=True)
class Keyring:
    """Keys by id; the first is the newest, the one that encrypts."""

    keys: tuple[tuple[str, bytes], ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise KeysError("no keys")

    @property
    def newest(self) -> tuple[str, bytes]:
        return self.keys[0]

    @property
    def ids(self) -> list[str]:
        return [key_id for key_id, _ in self.keys]

    def get(self, key_id: str) -> bytes | None:
        return next((key for known, key in self.keys if known == key_id), None)


def parse_keys(text: str, source: str, *, use: str = "AES-256") -> Keyring:
    """The keys in ``text`` (``id=base64key`` pairs, by commas or lines; ``#`` starts a comment).

    Raises:
        KeysError: naming ``source`` and the bad entry's id or position, never a key's bytes.
    """
    entries = [
        entry.strip()
        for line in text.splitlines()
        for entry in line.split("#", 1)[0].split(",")
        if entry.strip()
    ]
    if not entries:
        raise KeysError(f"{source}: no keys (expected id=base64key pairs, newest first)")
    keys: list[tuple[str, bytes]] = []
    for number, entry in enumerate(entries, 1):
        key_id, sep, encoded = (part.strip() for part in entry.partition("="))
        if not sep or not key_id:
            raise KeysError(f"{source}: entry {number} is not id=base64key")
        if len(key_id) > MAX_KEY_ID_CHARS or not _KEY_ID.fullmatch(key_id):
            raise KeysError(
                f"{source}: entry {number}: a key id is 1-{MAX_KEY_ID_CHARS} letters, digits, "
                "'.', '_' or '-'"
            )
        if any(known == key_id for known, _ in keys):
            raise KeysError(f"{source}: key id {key_id!r} is listed twice")
        key = _decode(encoded)
        if key is None:
            raise KeysError(f"{source}: key {key_id!r} is not base64")
        if len(key) != KEY_BYTES:
            raise KeysError(
                f"{source}: key {key_id!r} is {len(key)} bytes; {use} needs {KEY_BYTES}"
            )
        keys.append((key_id, key))
    return Keyring(tuple(keys))


def _decode(text: str) -> bytes | None:
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None


def load_keys(
    *,
    keys_env: str | None,
    keys_file: Path | None,
    environ: Mapping[str, str],
    section: str = "codec",
    use: str = "AES-256",
) -> Keyring:
    """The keys from the variable ``keys_env`` or the file ``keys_file``; errors name the
    configuration ``section`` they come from and what the keys are for (``use``).

    Raises:
        KeysError: the variable is unset or empty, the file unreadable, or a key malformed.
    """
    if keys_env is not None:
        text = environ.get(keys_env, "")
        if not text.strip():
            raise KeysError(f"{section}.keys_env: the variable {keys_env} is not set")
        return parse_keys(text, f"{section}.keys_env: {keys_env}", use=use)
    if keys_file is None:
        raise KeysError(f"{section}: set keys_env or keys_file")
    try:
        text = keys_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise KeysError(f"{section}.keys_file: {keys_file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise KeysError(f"{section}.keys_file: {keys_file}: not UTF-8 text") from None
    return parse_keys(text, f"{section}.keys_file: {keys_file}", use=use)


def new_key_line(key_id: str, key: bytes) -> str:
    """``id=base64key``, the form ``parse_keys`` reads."""
    return f"{key_id}={base64.b64encode(key).decode()}"
