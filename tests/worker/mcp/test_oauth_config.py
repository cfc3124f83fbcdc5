"""``[mcp.oauth]`` as the configuration loader and ``toolcalls mcp`` read it: one-line errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.worker.mcp.oauth_support import ISSUER
from tests.worker.mcp.support import Deployment
from tests.worker.mcp.test_oauth import PROFILES, oauth_section
from tests.worker.support import Spawn, free_port, hermetic_env
from toolcalls.worker.config import ConfigError, build_catalog, parse_config

GOOD_OAUTH = {
    "resource": "https://mcp.example.test/mcp",
    "issuers": [{"issuer": ISSUER, "jwks_url": "https://auth.example.test/jwks.json"}],
    "scopes": {"tools:all": "*"},
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"algorithms": ["HS256"]}, "mcp.oauth.algorithms: 'HS256' is not accepted: use asymm"),
        ({"algorithms": ["none"]}, "mcp.oauth.algorithms: 'none' is not accepted"),
        ({"resource": "mcp.example.test"}, "mcp.oauth.resource: 'mcp.example.test': resource must"),
        (
            {"resource": "http://mcp.example.test/mcp"},
            "resource must use https (http only on a loopback host)",
        ),
        (
            {"issuers": [{"issuer": ISSUER}]},
            f"mcp.oauth.issuers.0: issuer '{ISSUER}': give one of jwks_url or jwks_file",
        ),
        ({"scopes": {"tools all": "*"}}, "mcp.oauth.scopes: 'tools all' is not a scope"),
        ({"scopes": {"tools:x": "nope"}}, "mcp.oauth.scopes.tools:x: no profile 'nope'; profi"),
        ({"leeway_seconds": 3600}, "mcp.oauth.leeway_seconds: Input should be less than or eq"),
        ({"issuers": []}, "mcp.oauth.issuers: List should have at least 1 item"),
    ],
)
def test_a_bad_oauth_section_is_a_one_line_error(change: dict[str, Any], problem: str) -> None:
    data = {"tools": ["calculator"], "mcp": {"oauth": {**GOOD_OAUTH, **change}}}
    with pytest.raises(ConfigError) as refused:
        build_catalog(parse_config(data))
    message = str(refused.value)
    assert "\n" not in message
    assert problem in message, message


def test_a_good_oauth_section_loads() -> None:
    config = parse_config({"tools": ["calculator"], "mcp": {"oauth": GOOD_OAUTH}})
    build_catalog(config)
    assert config.mcp.oauth is not None
    assert config.mcp.oauth.algorithms == ["RS256", "ES256"]


async def test_an_unreadable_key_file_stops_the_server(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment
) -> None:
    port = free_port()
    missing = tmp_path / "missing-jwks.json"
    section = oauth_section(f"http://127.0.0.1:{port}/mcp", "http://127.0.0.1:9/j", missing)
    deployment.write(extra=section + PROFILES)
    server = spawn(
        *("mcp", "--http", f"127.0.0.1:{port}", "--config", str(deployment.path)),
        *("--address", address),
        env=hermetic_env(tmp_path),
    )
    assert await asyncio.to_thread(server.finish, 60) == 2
    lines = "".join(server.stderr).strip().splitlines()
    assert lines[-1].startswith(f"toolcalls: mcp.oauth: {missing}: cannot read the JWKS: "), lines
    # The unreachable URL was only a warning: the file stopped it.
    assert any("http://127.0.0.1:9/j: cannot fetch the JWKS" in line for line in lines), lines
