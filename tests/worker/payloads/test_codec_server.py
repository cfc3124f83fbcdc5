"""``toolcalls codec-server`` as a real process: the plain ``temporal`` CLI decrypts through it
with a token, and it refuses callers without one, with a wrong one, or from a foreign origin."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid

import httpx
import pytest
from temporalio.client import Client

from tests.support.payloads import ENCRYPTED, decoded_data, keys, payloads_in
from tests.worker.payloads.conftest import KEYS_ENV, Deployed, Deployment
from tests.worker.payloads.test_encryption import plain_history
from tests.worker.support import Spawn, free_port, hermetic_env
from toolcalls.worker.devserver import temporal_binary

UI = "http://localhost:8233"
TOKEN = "alice-codec-token-0123456789"
TOKENS_ENV = "TOOLCALLS_TEST_CODEC_TOKENS"
SERVER = f"""
[codec.server]
origins = ["{UI}"]
tokens_env = "{TOKENS_ENV}"
namespaces = ["default"]
"""
EXPRESSION = "1234567 * 3"


async def codec_show(address: str, workflow_id: str, endpoint: str, *auth: str) -> tuple[int, str]:
    """``temporal workflow show --codec-endpoint``: exit status and everything printed."""
    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *("workflow", "show", "-w", workflow_id, "--output", "json", "--address", address),
        *("--codec-endpoint", endpoint, *auth),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode()


@pytest.fixture
async def served(
    deployment: Deployment, client: Client, monkeypatch: pytest.MonkeyPatch, spawn: Spawn
) -> tuple[Deployed, str, str]:
    """A completed encrypted call, and a codec server for it: the deployment, the call's
    workflow id and the server's URL."""
    deployed = deployment(SERVER)
    workflow_id = f"codec-{uuid.uuid4()}"
    async with deployed.worker(client, monkeypatch):
        done = await deployed.run(
            "call", "calculator", json.dumps({"expression": EXPRESSION}), "--id", workflow_id
        )
    assert done.code == 0, done.stderr
    port = free_port()
    env = hermetic_env(deployed.tmp_path, **{KEYS_ENV: keys("k1"), TOKENS_ENV: f"alice={TOKEN}"})
    server = spawn(
        "codec-server", "--listen", f"127.0.0.1:{port}", "--config", str(deployed.config), env=env
    )
    await asyncio.to_thread(server.wait_for_line, "codec server at", 60)
    return deployed, workflow_id, f"http://127.0.0.1:{port}"


async def test_the_temporal_cli_decrypts_through_the_server_with_a_token(
    served: tuple[Deployed, str, str],
) -> None:
    deployed, workflow_id, endpoint = served
    assert EXPRESSION not in await plain_history(deployed.address, workflow_id)
    code, shown = await codec_show(
        deployed.address, workflow_id, endpoint, "--codec-auth", f"Bearer {TOKEN}"
    )
    assert code == 0, shown
    decoded = list(payloads_in(json.loads(shown)))
    assert all(p["metadata"]["encoding"] != ENCRYPTED for p in decoded)
    assert any(EXPRESSION.encode() in decoded_data(p) for p in decoded)

    # Without a token, or with a wrong one, the CLI gets no plaintext: it fails.
    for auth in ((), ("--codec-auth", "Bearer not-the-token-at-all")):
        code, refused = await codec_show(deployed.address, workflow_id, endpoint, *auth)
        assert code != 0, refused
        assert EXPRESSION not in refused


async def test_only_the_configured_origin_and_namespace_are_served(
    served: tuple[Deployed, str, str],
) -> None:
    _, _, endpoint = served
    sealed = {"metadata": {"encoding": ENCRYPTED}, "data": ""}
    plain = {
        "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
        "data": base64.b64encode(b'"hello"').decode(),
    }
    bearer = {"Authorization": f"Bearer {TOKEN}", "X-Namespace": "default"}
    async with httpx.AsyncClient(base_url=endpoint, timeout=30) as http:
        preflight = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,x-namespace",
        }
        ok = await http.options("/decode", headers={"Origin": UI, **preflight})
        assert ok.status_code == 204
        assert ok.headers["access-control-allow-origin"] == UI
        assert "x-namespace" in ok.headers["access-control-allow-headers"].lower()
        foreign = await http.options("/decode", headers={"Origin": "http://evil.test", **preflight})
        assert foreign.status_code == 403
        assert "access-control-allow-origin" not in foreign.headers

        # Encoding and decoding round-trip for an allowed caller, CORS headers included.
        encoded = await http.post(
            "/encode", json={"payloads": [plain]}, headers={"Origin": UI, **bearer}
        )
        assert encoded.status_code == 200, encoded.text
        assert encoded.headers["access-control-allow-origin"] == UI
        [sealed] = encoded.json()["payloads"]
        assert sealed["metadata"]["encoding"] == ENCRYPTED
        decoded = await http.post("/decode", json={"payloads": [sealed]}, headers=bearer)
        assert decoded.json() == {"payloads": [plain]}
        # The CLI's templated form: the namespace in the path.
        templated = await http.post(
            "/default/decode",
            json={"payloads": [sealed]},
            headers={"Authorization": bearer["Authorization"]},
        )
        assert templated.json() == {"payloads": [plain]}

        refusals = [
            (
                {"Origin": "http://evil.test", **bearer},
                403,
                "origin http://evil.test is not allowed",
            ),
            ({"X-Namespace": "default"}, 401, "missing bearer token"),
            (
                {**bearer, "Authorization": "Bearer wrong-token-0123456789"},
                403,
                "token not accepted",
            ),
            ({**bearer, "X-Namespace": "other"}, 403, "namespace other is not served here"),
        ]
        for headers, status, reason in refusals:
            refused = await http.post("/decode", json={"payloads": [sealed]}, headers=headers)
            assert (refused.status_code, refused.json()) == (status, {"error": reason})
            assert EXPRESSION not in refused.text
        foreign_post = await http.post(
            "/decode", json={"payloads": [sealed]}, headers={"Origin": "http://evil.test", **bearer}
        )
        assert "access-control-allow-origin" not in foreign_post.headers

        unknown = await http.post(
            "/decode",
            json={
                "payloads": [
                    {
                        **sealed,
                        "metadata": {
                            **sealed["metadata"],
                            "encryption-key-id": base64.b64encode(b"k9").decode(),
                        },
                    }
                ]
            },
            headers=bearer,
        )
        assert unknown.status_code == 422
        assert unknown.json()["error"].startswith("payload encrypted with key 'k9', which")
