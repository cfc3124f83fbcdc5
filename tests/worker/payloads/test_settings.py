"""The ``[codec]`` and ``[payloads]`` sections: what they refuse, and the limits they raise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.worker.support import TOOLCALLS, run, write_config
from toolcalls.activities.family import Extra
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES, output_bytes
from toolcalls.worker.config import ConfigError, build_catalog, parse_config
from toolcalls.worker.payloads import converter
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.payloads.settings import DEFAULT_STORED_RESULT_BYTES


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        build_catalog(parse_config(data))
    return str(caught.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"payloads": {"max_result_bytes": 2 * MAX_PAYLOAD_BYTES}},
            "payloads: max_result_bytes over 1048576 needs a store (store = 'local' or 's3')",
        ),
        (
            {"payloads": {"store": "s3"}},
            "payloads: store = 's3' needs a [payloads.s3] section with its bucket",
        ),
        ({"payloads": {"store": "disk"}}, "payloads.store: Input should be 'local' or 's3'"),
        ({"codec": {"keys_env": "NOT A NAME"}}, "codec.keys_env: 'NOT A NAME' is not an "),
        (
            {
                "codec": {
                    "keys_env": "K",
                    "server": {"listen": "0.0.0.0:8081", "allow_anonymous": True},
                }
            },
            "allow_anonymous needs a loopback listen address, not 0.0.0.0:8081",
        ),
        ({"codec": {"keys_env": "K", "server": {}}}, "set tokens_env (or allow_anonymous"),
        (
            {"codec": {"keys_env": "K", "server": {"tokens_env": "T", "origins": ["http://ui/x"]}}},
            "an origin is scheme://host[:port], with no path",
        ),
        ({"codec": {"compress": True}}, "codec: set keys_env or keys_file"),
    ],
)
def test_bad_sections_are_named(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert message in str(caught.value)


def test_the_result_limit_follows_the_store(tmp_path: Path) -> None:
    assert parse_config({}).payloads.result_bytes == MAX_PAYLOAD_BYTES
    local = {"store": "local", "local": {"path": str(tmp_path)}}
    assert parse_config({"payloads": local}).payloads.result_bytes == DEFAULT_STORED_RESULT_BYTES
    # The document tools' character ceiling follows it.
    docs = {"roots": [str(tmp_path)], "max_output_chars": 200_000}
    tools = ["read_document"]
    assert refusal({"tools": tools, "documents": docs}) == (
        "configuration: documents.max_output_chars: at most 100000; more needs a payload store "
        "([payloads] store)"
    )
    stored = {**local, "max_result_bytes": 4 * MAX_PAYLOAD_BYTES}
    build_catalog(parse_config({"tools": tools, "documents": docs, "payloads": stored}))
    over = {**docs, "max_output_chars": 5 * MAX_PAYLOAD_BYTES}
    assert refusal({"tools": tools, "documents": over, "payloads": stored}) == (
        f"configuration: documents.max_output_chars: at most "
        f"{output_bytes(4 * MAX_PAYLOAD_BYTES)} (payloads.max_result_bytes)"
    )


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    config = parse_config({"codec": {"keys_env": "K"}})
    monkeypatch.setattr(converter, "CODEC_EXTRA", Extra("codec", ("no_such_module_here",)))
    with pytest.raises(ConfigError) as caught:
        data_converter(config, environ={"K": "unused"})
    assert str(caught.value) == (
        "codec: encryption needs the codec extra (missing no_such_module_here): "
        "pip install 'toolcalls[codec]'"
    )


def test_the_codec_server_needs_its_section(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[codec]\nkeys_env = "K"\n')
    done = run([TOOLCALLS, "codec-server", "--config", str(path)], tmp_path, K="")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "toolcalls: codec.server: toolcalls codec-server needs [codec] keys_env or keys_file and "
        "a [codec.server] section (tokens_env, or allow_anonymous on loopback)"
    )
