"""``EncryptionCodec``: AES-256-GCM over every payload, with the key's id in its metadata.

The whole payload (its metadata, encoding included, and its data) is serialized, optionally
compressed, and encrypted with a fresh 96-bit nonce under the newest key; the key id and the
compression are bound to the ciphertext as associated data, so neither can be swapped. What
stays readable in history is only that a payload is encrypted, with which key id, its size, and
whether it was compressed.

Decoding leaves payloads that are not ours alone (plaintext written before encryption was turned
on, external-storage claims). A payload whose key this process lacks, or that does not
authenticate under the key of that id, raises ``PayloadKeyError`` naming the key id: never
garbage, never a silent plaintext. ``KeylessCodec`` and ``PayloadKeyError`` live with the client
(``toolcalls.workflows.reach.keyless``), which uses them too.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from toolcalls.worker.payloads.keys import Keyring
from toolcalls.workflows.reach.keyless import (
    ENCODING as ENCODING,
    KEY_ID as KEY_ID,
    KeylessCodec as KeylessCodec,
    PayloadKeyError as PayloadKeyError,
    key_id_of,
)

CIPHER = "encryption-cipher"
COMPRESSION = "encryption-compression"
AES_256_GCM = b"AES-256-GCM"
ZLIB = b"zlib"
NONCE_BYTES = 12
_AAD_PREFIX = b"toolcalls-payload-v1\x00"


def _aad(key_id: bytes, compression: bytes) -> bytes:
    return _AAD_PREFIX + key_id + b"\x00" + compression


class EncryptionCodec(PayloadCodec):
    """Encrypt with the keyring's newest key; decrypt with whichever key a payload names.

    With ``compress``, a payload is zlib-compressed before encryption when that makes it smaller
    (compression reveals something of the content through the size; see docs/payloads.md).
    """

    def __init__(self, keyring: Keyring, *, compress: bool = False) -> None:
        # Imported here so that a deployment without a codec needs no ``cryptography``.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.keyring = keyring
        self.compress = compress
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keyring.keys}

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decrypt(payload) for payload in payloads]

    def _encrypt(self, payload: Payload) -> Payload:
        key_id = self.keyring.newest[0]
        plain = payload.SerializeToString()
        compression = b""
        if self.compress:
            packed = zlib.compress(plain)
            if len(packed) < len(plain):
                plain, compression = packed, ZLIB
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[key_id].encrypt(nonce, plain, _aad(key_id.encode(), compression))
        metadata = {"encoding": ENCODING, KEY_ID: key_id.encode(), CIPHER: AES_256_GCM}
        if compression:
            metadata[COMPRESSION] = compression
        return Payload(metadata=metadata, data=nonce + sealed)

    def _decrypt(self, payload: Payload) -> Payload:
        key_id = key_id_of(payload)
        if key_id is None:
            return payload
        cipher_name = payload.metadata.get(CIPHER, b"")
        if cipher_name != AES_256_GCM:
            raise PayloadKeyError(
                f"payload encrypted with key {key_id!r} uses cipher "
                f"{cipher_name.decode(errors='replace')!r}, which this version cannot decrypt"
            )
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise PayloadKeyError(
                f"payload encrypted with key {key_id!r}, which this process does not have "
                f"(its keys: {', '.join(self.keyring.ids)}): add that key to the [codec] keys"
            )
        compression = payload.metadata.get(COMPRESSION, b"")
        if compression not in (b"", ZLIB):
            raise PayloadKeyError(
                f"payload encrypted with key {key_id!r} names an unknown compression "
                f"{compression.decode(errors='replace')!r}"
            )
        data = payload.data
        from cryptography.exceptions import InvalidTag

        try:
            plain = cipher.decrypt(
                data[:NONCE_BYTES], data[NONCE_BYTES:], _aad(key_id.encode(), compression)
            )
        except InvalidTag:
            raise PayloadKeyError(
                f"payload encrypted with key {key_id!r} does not decrypt with this process's key "
                f"{key_id!r}: the key differs from the one that encrypted it, or the payload "
                "was altered"
            ) from None
        if compression:
            plain = zlib.decompress(plain)
        inner = Payload()
        inner.ParseFromString(plain)
        return inner
