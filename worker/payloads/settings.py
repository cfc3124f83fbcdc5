"""The ``[codec]`` and ``[payloads]`` sections: encryption keys, the codec server, the store.

Secrets never sit in the file: ``[codec]`` names where the keys are (an environment variable or a
file) and where the codec server's tokens are; S3 credentials come from boto's own chain
(``AWS_*`` variables, profiles, instance roles).
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolcalls.activities.limits import MAX_PAYLOAD_BYTES, MAX_STORED_RESULT_BYTES

DEFAULT_LISTEN = "127.0.0.1:8081"
DEFAULT_THRESHOLD_BYTES = 256 * 1024
"""Payloads of at least this many encoded bytes go to the store (the SDK's default, and
Temporal's warning size)."""
DEFAULT_STORED_RESULT_BYTES = 16 * 1024 * 1024
"""What a tool's result may reach when a store is configured and ``max_result_bytes`` is not."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ORIGIN = re.compile(r"https?://[^/\s?#]+")
_WILDCARDS = ("", "0.0.0.0", "::")
"""Listen addresses meaning every interface: not where a browser connects to."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not an environment variable name")
    return value


class CodecServerSection(_Section):
    """``toolcalls codec-server``: where it listens, who may call it, from which UI."""

    listen: str = DEFAULT_LISTEN
    """``HOST:PORT``; ``--listen`` beats it."""
    origins: list[str] = Field(default_factory=list)
    """Web origins (``http://localhost:8233``) whose pages may call it: the Temporal UI's. Only
    they get CORS headers; a request from any other origin is refused."""
    tokens_env: str | None = None
    """An environment variable holding ``name=token`` pairs separated by commas; a caller must
    send ``Authorization: Bearer <token>`` with one of them."""
    allow_anonymous: bool = False
    """Serve callers without a token: only on a loopback address (a single-user dev host)."""
    namespaces: list[str] = Field(default_factory=list)
    """The namespaces whose payloads it encodes and decodes (``X-Namespace``); empty: any."""

    @field_validator("tokens_env")
    @classmethod
    def _tokens_env(cls, name: str | None) -> str | None:
        return _env_name(name)

    @field_validator("origins")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        bad = [origin for origin in origins if not _ORIGIN.fullmatch(origin)]
        if bad:
            raise ValueError(f"{bad}: an origin is scheme://host[:port], with no path")
        return [origin.lower() for origin in origins]

    @model_validator(mode="after")
    def _authorized(self) -> Self:
        if self.tokens_env is None and not self.allow_anonymous:
            raise ValueError("set tokens_env (or allow_anonymous on a loopback address)")
        if self.allow_anonymous and not is_loopback(self.listen):
            raise ValueError(f"allow_anonymous needs a loopback listen address, not {self.listen}")
        return self


class CodecSection(_Section):
    """Encryption of every payload (AES-256-GCM), and the codec server for Temporal's UI and CLI.

    Keys are ``id=base64key`` pairs (32-byte keys), newest first, separated by commas (a file may
    also use new lines and ``#`` comments). The newest encrypts; any of them decrypts.
    """

    keys_env: str | None = None
    """An environment variable holding the keys."""
    keys_file: Path | None = None
    """A file holding the keys (a mounted secret, say)."""
    compress: bool = False
    """Compress (zlib) before encrypting, when that makes the payload smaller."""
    server: CodecServerSection | None = None

    @field_validator("keys_env")
    @classmethod
    def _keys_env(cls, name: str | None) -> str | None:
        return _env_name(name)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.keys_env is not None and self.keys_file is not None:
            raise ValueError("set keys_env or keys_file, not both")
        if self.keys_env is None and self.keys_file is None and (self.compress or self.server):
            raise ValueError("set keys_env or keys_file")
        return self

    @property
    def enabled(self) -> bool:
        return self.keys_env is not None or self.keys_file is not None

    @property
    def server_url(self) -> str | None:
        """Where a browser on this host reaches ``toolcalls codec-server`` (the Temporal UI's
        codec endpoint): ``http://`` and its ``listen``, a wildcard address made loopback;
        ``None`` without keys or a ``[codec.server]`` section."""
        if not self.enabled or self.server is None:
            return None
        host, _, port = self.server.listen.rpartition(":")
        bare = host.strip("[]")
        if bare in _WILDCARDS:
            host = "[::1]" if ":" in bare else "127.0.0.1"
        elif ":" in bare:
            host = f"[{bare}]"
        return f"http://{host}:{port}"


class Store(StrEnum):
    LOCAL = "local"
    S3 = "s3"


class LocalStoreSection(_Section):
    path: Path = Path(".toolcalls/payloads")
    """The directory of stored payloads; every worker and client of the deployment must reach it
    (one host, or a shared mount)."""


class S3StoreSection(_Section):
    """The SDK's S3 driver (``temporalio.contrib.aws.s3driver``); credentials from boto's chain."""

    bucket: str = Field(min_length=3, max_length=63)
    region: str | None = None
    endpoint_url: str | None = None
    """An S3-compatible server instead of AWS (MinIO, a test server)."""
    driver_name: str = "aws.s3driver"
    """The name recorded in each claim: changing it makes earlier claims unreadable."""


class PayloadsSection(_Section):
    """Large payloads outside history: a store, the size that sends a payload there, and how large
    a tool's result may then be."""

    store: Store | None = None
    threshold_bytes: int = Field(default=DEFAULT_THRESHOLD_BYTES, ge=0, le=MAX_PAYLOAD_BYTES)
    """Payloads of at least this many bytes (measured encoded, after the codec) go to the store."""
    max_result_bytes: int | None = Field(default=None, ge=1024, le=MAX_STORED_RESULT_BYTES)
    """What a tool's result may reach, measured as its payload; default 1 MiB without a store,
    16 MiB with one. Over 1 MiB needs a store."""
    local: LocalStoreSection = Field(default_factory=LocalStoreSection)
    s3: S3StoreSection | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.store is Store.S3 and self.s3 is None:
            raise ValueError("store = 's3' needs a [payloads.s3] section with its bucket")
        limit = self.max_result_bytes
        if self.store is None and limit is not None and limit > MAX_PAYLOAD_BYTES:
            raise ValueError(
                f"max_result_bytes over {MAX_PAYLOAD_BYTES} needs a store (store = 'local' or 's3')"
            )
        return self

    @property
    def result_bytes(self) -> int:
        """What a tool's result may reach in this deployment."""
        if self.max_result_bytes is not None:
            return self.max_result_bytes
        return DEFAULT_STORED_RESULT_BYTES if self.store is not None else MAX_PAYLOAD_BYTES


def is_loopback(listen: str) -> bool:
    """Whether ``HOST:PORT`` names a loopback address (``localhost`` counts)."""
    host = listen.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
