"""Keys, stored payloads and histories for the payload tests."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from toolcalls.worker.payloads.keys import new_key_line

ENCRYPTED = base64.b64encode(b"binary/encrypted").decode()
ZLIB = b"binary/zlib"


def key_bytes(key_id: str) -> bytes:
    """A fixed 32-byte key for ``key_id`` (tests only), so separate processes agree on it."""
    return hashlib.sha256(f"toolcalls test key {key_id}".encode()).digest()


def key_line(key_id: str, key: bytes) -> str:
    return new_key_line(key_id, key)


def keys(*ids: str) -> str:
    """The ``id=base64key`` pairs of ``ids``' test keys, newest first."""
    return ",".join(key_line(key_id, key_bytes(key_id)) for key_id in ids)


def payloads_in(node: Any, inside: str = "") -> Iterator[dict[str, Any]]:
    """Every payload (``{"metadata": ..., "data": ...}``) in a history exported as JSON that the
    data converter wrote: not search attributes (never encoded), nor the local activity marker's
    own bookkeeping (its ``data`` detail: sequence number, attempt, activity type, times), nor a
    patch marker's record of the patch's name (``patch-data``): the SDK's core writes both."""
    if isinstance(node, dict):
        if isinstance(node.get("metadata"), dict) and "encoding" in node["metadata"]:
            yield node
        for key, value in node.items():
            if key == "searchAttributes" or (inside == "details" and key in ("data", "patch-data")):
                continue
            yield from payloads_in(value, key)
    elif isinstance(node, list):
        for item in node:
            yield from payloads_in(item, inside)


def metadata(payload: dict[str, Any], key: str) -> str:
    return base64.b64decode(payload["metadata"][key]).decode()


def decoded_data(payload: dict[str, Any]) -> bytes:
    data = payload.get("data", "")
    return base64.b64decode(data) if isinstance(data, str) else json.dumps(data).encode()


class ZlibCodec(PayloadCodec):
    """A real codec (compression), standing in for the encryption codec a deployment might use."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(metadata={"encoding": ZLIB}, data=zlib.compress(p.SerializeToString()))
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload.FromString(zlib.decompress(p.data)) if p.metadata.get("encoding") == ZLIB else p
            for p in payloads
        ]
