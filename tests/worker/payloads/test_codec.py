"""``EncryptionCodec`` and its keys, without a server: rotation, wrong keys, tampering."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.support.payloads import key_line, keys
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.worker.payloads.codec import (
    COMPRESSION,
    ENCODING,
    KEY_ID,
    EncryptionCodec,
    KeylessCodec,
    PayloadKeyError,
)
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.payloads.keys import KeysError, load_keys, parse_keys
from toolcalls.workflows.models.call import ToolCallRequest

SECRET = "the quarterly numbers are 42"


def plain(text: str = SECRET) -> Payload:
    return pydantic_data_converter.payload_converter.to_payload(text)


async def test_the_whole_payload_is_sealed_under_the_newest_key() -> None:
    codec = EncryptionCodec(parse_keys(keys("new", "old"), "test"))
    (sealed,) = await codec.encode([plain()])
    assert sealed.metadata["encoding"] == ENCODING
    assert sealed.metadata[KEY_ID] == b"new"
    # Neither the value nor its original encoding is readable.
    assert SECRET.encode() not in sealed.data
    assert b"json/plain" not in sealed.SerializeToString()
    assert await codec.decode([sealed]) == [plain()]
    # A fresh nonce each time: the same value never gives the same ciphertext.
    (again,) = await codec.encode([plain()])
    assert again.data != sealed.data


async def test_rotation_keeps_old_payloads_readable() -> None:
    old = EncryptionCodec(parse_keys(keys("k1"), "test"))
    (before,) = await old.encode([plain()])
    rotated = EncryptionCodec(parse_keys(keys("k2", "k1"), "test"))
    (after,) = await rotated.encode([plain("later")])
    assert after.metadata[KEY_ID] == b"k2"
    assert await rotated.decode([before, after]) == [plain(), plain("later")]
    # The process that has only the old key names the key it lacks.
    with pytest.raises(PayloadKeyError, match=r"^payload encrypted with key 'k2', which this"):
        await old.decode([after])


async def test_a_wrong_key_of_the_same_id_is_refused_by_id() -> None:
    (sealed,) = await EncryptionCodec(parse_keys(keys("k1"), "test")).encode([plain()])
    impostor = EncryptionCodec(parse_keys(key_line("k1", os.urandom(32)), "test"))
    with pytest.raises(PayloadKeyError) as raised:
        await impostor.decode([sealed])
    assert str(raised.value).startswith(
        "payload encrypted with key 'k1' does not decrypt with this process's key 'k1'"
    )


async def test_tampering_with_the_data_or_the_key_id_is_detected() -> None:
    codec = EncryptionCodec(parse_keys(keys("a", "b"), "test"))
    (sealed,) = await codec.encode([plain()])
    flipped = Payload()
    flipped.CopyFrom(sealed)
    flipped.data = sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])
    relabelled = Payload()
    relabelled.CopyFrom(sealed)
    relabelled.metadata[KEY_ID] = b"b"
    for altered in (flipped, relabelled):
        with pytest.raises(PayloadKeyError, match="or the payload was altered"):
            await codec.decode([altered])


async def test_compression_shrinks_what_compresses_and_round_trips() -> None:
    codec = EncryptionCodec(parse_keys(keys("k"), "test"), compress=True)
    big = plain("abc" * 100_000)
    (packed,) = await codec.encode([big])
    assert packed.metadata[COMPRESSION] == b"zlib"
    assert len(packed.data) < len(big.data) // 10
    assert await codec.decode([packed]) == [big]
    # Random bytes do not compress: they are left uncompressed.
    noise = plain(os.urandom(3000).hex())
    (sealed,) = await EncryptionCodec(parse_keys(keys("k"), "test"), compress=True).encode([noise])
    assert len(sealed.data) < len(noise.data) * 2
    # The compression flag is bound to the ciphertext.
    (flagless,) = await codec.encode([big])
    del flagless.metadata[COMPRESSION]
    with pytest.raises(PayloadKeyError, match="altered"):
        await codec.decode([flagless])


async def test_plaintext_payloads_pass_and_a_keyless_process_names_the_key() -> None:
    codec = EncryptionCodec(parse_keys(keys("k1"), "test"))
    (sealed,) = await codec.encode([plain()])
    # Payloads written before encryption was turned on stay readable.
    assert await codec.decode([plain("old")]) == [plain("old")]
    with pytest.raises(PayloadKeyError) as raised:
        await KeylessCodec().decode([sealed])
    assert str(raised.value) == (
        "payload encrypted with key 'k1', but this process has no keys: "
        "configure [codec] keys_env or keys_file"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "test: no keys (expected id=base64key pairs, newest first)"),
        ("k1", "test: entry 1 is not id=base64key"),
        ("k1=AAAA", "test: key 'k1' is 3 bytes; AES-256 needs 32"),
        ("k1=not*base64", "test: key 'k1' is not base64"),
        ("bad id=AAAA", "test: entry 1: a key id is 1-64 letters, digits, '.', '_' or '-'"),
    ],
)
def test_malformed_keys_are_named_without_their_bytes(text: str, message: str) -> None:
    with pytest.raises(KeysError) as raised:
        parse_keys(text, "test")
    assert str(raised.value) == message


def test_a_listed_twice_id_and_the_sources() -> None:
    line = keys("k1")
    with pytest.raises(KeysError, match="key id 'k1' is listed twice"):
        parse_keys(f"{line},{line}", "test")
    with pytest.raises(KeysError, match=r"^codec\.keys_env: the variable KEYS is not set$"):
        load_keys(keys_env="KEYS", keys_file=None, environ={})
    missing = Path("/nonexistent/keys")
    with pytest.raises(KeysError, match=r"^codec.keys_file: /nonexistent/keys: No such file"):
        load_keys(keys_env=None, keys_file=missing, environ={})


def test_a_keys_file_takes_lines_and_comments(tmp_path: Path) -> None:
    file = tmp_path / "keys"
    file.write_text(f"# rotated monthly\n{keys('k2')}  # current\n{keys('k1')}\n")
    assert load_keys(keys_env=None, keys_file=file, environ={}).ids == ["k2", "k1"]


async def test_the_configured_converter_encrypts_and_names_a_bad_key() -> None:
    config = parse_config({"codec": {"keys_env": "TEST_KEYS", "compress": True}})
    converter = data_converter(config, environ={"TEST_KEYS": keys("k1")})
    request = ToolCallRequest(tool="read_file", arguments={"path": f"/{SECRET}"})
    (payload,) = await converter.encode([request])
    assert payload.metadata[KEY_ID] == b"k1"
    assert SECRET.encode() not in payload.data
    assert await converter.decode([payload], [ToolCallRequest]) == [request]
    with pytest.raises(ConfigError, match=r"^codec.keys_env: TEST_KEYS: key 'k1' is 3 bytes"):
        data_converter(config, environ={"TEST_KEYS": "k1=AAAA"})
    with pytest.raises(ConfigError, match=r"codec: set keys_env or keys_file, not both"):
        parse_config({"codec": {"keys_env": "A", "keys_file": "/k"}})
