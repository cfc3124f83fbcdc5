"""``toolcalls mcp --http`` as an OAuth 2.1 protected resource (``[mcp.oauth]``): access tokens
signed by keys the test makes, their JWKS served over loopback HTTP and from a file, the SDK's
streamable HTTP client, and the static bearer token beside them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import mcp as mcp_sdk
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from temporalio.client import Client

from tests.worker.mcp.oauth_support import (
    FILE_ISSUER,
    ISSUER,
    OTHER_ISSUER,
    JwksServer,
    Signer,
    hmac_with_public_key,
    jwks,
    unsigned,
)
from tests.worker.mcp.support import (
    TOKEN,
    Deployment,
    Recorder,
    accept,
    http_session,
    text_of,
    workflow_of,
)
from tests.worker.mcp.test_http import INITIALIZE
from tests.worker.support import Spawn, free_port, hermetic_env
from toolcalls.worker.inbox.words import asked_by
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.reach.client import ToolCallClient

PROFILES = """
[profiles.calc]
tools = ["calculator", "current_datetime"]
[profiles.store]
tools = ["get_value", "set_value"]
"""


@dataclass
class Protected:
    """A running ``toolcalls mcp --http`` with ``[mcp.oauth]``: its endpoint and the keys."""

    url: str
    resource: str
    signer: Signer
    file_signer: Signer
    jwks: JwksServer
    process: object


@pytest.fixture
def profiled(deployment: Deployment) -> Deployment:
    """The deployment with its profiles, written before the worker reads it."""
    deployment.write(extra=PROFILES)
    return deployment


@pytest.fixture
def jwks_server() -> Iterator[tuple[Signer, JwksServer]]:
    signer = Signer(ISSUER, "key-1")
    with JwksServer(jwks(signer)).running() as served:
        yield signer, served


def oauth_section(resource: str, jwks_url: str, jwks_file: Path, **more: str) -> str:
    extra = "".join(f"{key} = {value}\n" for key, value in more.items())
    return f"""
[mcp.oauth]
resource = "{resource}"
{extra}
[[mcp.oauth.issuers]]
issuer = "{ISSUER}"
jwks_url = "{jwks_url}"

[[mcp.oauth.issuers]]
issuer = "{FILE_ISSUER}"
jwks_file = "{jwks_file}"

[mcp.oauth.scopes]
"tools:all" = "*"
"tools:calc" = "calc"
"tools:store" = "store"
"""


def serve_protected(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
    *extra: str,
    static: bool = True,
    mcp: str = "",
) -> Protected:
    signer, served = jwks_server
    file_signer = Signer(FILE_ISSUER, "file-key", alg="ES256")
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks(file_signer)), encoding="utf-8")
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    deployment.write(mcp, extra=oauth_section(resource, served.url, keys) + PROFILES)
    env = {"TOOLCALLS_MCP_TOKEN": TOKEN} if static else {}
    server = spawn(
        *("mcp", "--http", f"127.0.0.1:{port}", "--config", str(deployment.path)),
        *("--address", address, *extra),
        env=hermetic_env(tmp_path, **env),
    )
    line = server.wait_for_line("MCP server at")
    assert line.strip() == f"MCP server at http://127.0.0.1:{port}/mcp (6 tools)"
    return Protected(resource, resource, signer, file_signer, served, server)


async def test_a_valid_token_calls_a_tool_and_its_subject_is_the_requester(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
    profiled: Deployment,
    worker: None,
    client: Client,
) -> None:
    server = serve_protected(spawn, tmp_path, address, deployment, jwks_server, static=False)
    token = server.signer.token(aud=server.resource, sub="alice")
    async with http_session(server.url, token=token) as mcp:
        listed = await mcp.list_tools()
        result = await mcp.call_tool("calculator", {"expression": "6 * 7"})
    assert len(listed.tools) == 6
    assert result.structured_content == {"expression": "6 * 7", "result": 42}
    view = await ToolCallClient(client, task_queue=deployment.task_queue).status(
        workflow_of(result)
    )
    principal = f"oauth:{ISSUER}#alice"
    assert view.metadata == {"front": "mcp", "mcp_user": principal, "mcp_client": "mcp"}
    assert asked_by(view.parent_id, view.metadata) == f"MCP client mcp as {principal}"
    # The token went no further than the gate: not in the request the workflow recorded.
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_of(result))
    history = json.dumps((await handle.fetch_history()).to_json_dict())
    assert token not in history
    assert token.split(".")[1] not in history
    # The verified subject is also whom the call acts for (policies see it as the principal).
    assert (await handle.result()).principal == principal


async def test_a_token_s_scope_holds_it_to_its_profile(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
    profiled: Deployment,
    worker: None,
) -> None:
    server = serve_protected(spawn, tmp_path, address, deployment, jwks_server)
    # A key set from a file, and ES256: the file issuer's token on the "calc" profile only.
    token = server.file_signer.token(aud=[server.resource, "other"], scope="tools:calc")
    async with http_session(server.url, token=token) as mcp:
        listed = await mcp.list_tools()
        product = await mcp.call_tool("calculator", {"expression": "2 + 3"})
        with pytest.raises(MCPError, match="unknown tool 'get_value'; available: calculator, "):
            await mcp.call_tool("get_value", {"key": "k"})
    assert [tool.name for tool in listed.tools] == ["calculator", "current_datetime"]
    assert not product.is_error, text_of(product)
    # The static token still works beside OAuth, with every tool.
    async with http_session(server.url, token=TOKEN) as mcp:
        assert len((await mcp.list_tools()).tools) == 6


async def test_refused_tokens_get_the_status_and_challenge_that_say_why(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
) -> None:
    server = serve_protected(spawn, tmp_path, address, deployment, jwks_server, "--profile", "calc")
    signer, aud = server.signer, server.resource
    metadata = "http://127.0.0.1:" + aud.split(":")[2].split("/")[0]
    metadata += "/.well-known/oauth-protected-resource/mcp"
    impostor = Signer(ISSUER, "key-1")  # the issuer's kid, another key
    stranger = Signer(OTHER_ISSUER, "key-1", key=signer.key)  # a real key, an unknown issuer
    cases = {
        "wrong audience": signer.token(aud="https://elsewhere.example.test/mcp"),
        "no audience": signer.token(),
        "expired": signer.token(aud=aud, lifetime=-120),
        "another issuer": stranger.token(aud=aud),
        "bad signature": impostor.token(aud=aud),
        "alg none": unsigned({"iss": ISSUER, "sub": "alice", "aud": aud, "scope": "tools:all"}),
        "not a jwt": "not-a-token-at-all-0123456789",
        "hs256 with the public key": hmac_with_public_key(
            signer,
            {"iss": ISSUER, "sub": "eve", "aud": aud, "exp": 2**40, "scope": "tools:all"},
        ),
    }
    reasons = {
        "wrong audience": "the token is not for this resource (aud)",
        "no audience": "the token has no 'aud' claim",
        "expired": "the token has expired",
        "another issuer": "the token's issuer is not accepted",
        "bad signature": "the token's signature does not verify",
        "alg none": "the signature algorithm 'none' is not accepted",
        "not a jwt": "not a JWT access token",
        "hs256 with the public key": "the signature algorithm 'HS256' is not accepted",
    }
    async with httpx.AsyncClient(timeout=30) as http:
        for case, token in cases.items():
            refused = await http.post(
                server.url, json=INITIALIZE, headers={"Authorization": f"Bearer {token}"}
            )
            assert refused.status_code == 401, case
            assert refused.headers["www-authenticate"] == (
                f'Bearer resource_metadata="{metadata}", error="invalid_token", '
                f'error_description="{reasons[case]}"'
            ), case
            assert refused.json() == {
                "error": "invalid_token",
                "error_description": reasons[case],
            }
            assert "mcp-session-id" not in refused.headers
        missing = await http.post(server.url, json=INITIALIZE)
        store_only = signer.token(aud=aud, scope="tools:store openid")
        narrow = await http.post(
            server.url, json=INITIALIZE, headers={"Authorization": f"Bearer {store_only}"}
        )
        unscoped = await http.post(
            server.url,
            json=INITIALIZE,
            headers={"Authorization": f"Bearer {signer.token(aud=aud, scope=None)}"},
        )
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata}"'
    for response in (narrow, unscoped):
        assert response.status_code == 403
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{metadata}", error="insufficient_scope", '
            'scope="tools:all tools:calc", '
            "error_description=\"the token's scopes do not reach the calc's tools\""
        )
        assert response.json()["scope"] == "tools:all tools:calc"
    # The right scope passes the gate on the same server.
    good = server.signer.token(aud=aud, scope="tools:calc")
    async with http_session(server.url, token=good) as mcp:
        assert [tool.name for tool in (await mcp.list_tools()).tools] == [
            "calculator",
            "current_datetime",
        ]


async def test_the_protected_resource_metadata_names_the_authorization_servers(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
) -> None:
    server = serve_protected(spawn, tmp_path, address, deployment, jwks_server)
    origin = server.url.removesuffix("/mcp")
    async with httpx.AsyncClient(timeout=30) as http:
        documents = [
            await http.get(origin + path)
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            )
        ]
    for document in documents:
        assert document.status_code == 200
        assert document.headers["content-type"] == "application/json"
        assert document.json() == {
            "resource": server.resource,
            "authorization_servers": [ISSUER, FILE_ISSUER],
            "scopes_supported": ["tools:all", "tools:calc", "tools:store"],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolcalls",
        }


async def test_a_rotated_key_is_fetched_again(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
) -> None:
    server = serve_protected(spawn, tmp_path, address, deployment, jwks_server)
    fetched = server.jwks.fetches
    assert fetched == 1  # once at start
    old = server.signer.token(aud=server.resource)
    async with http_session(server.url, token=old) as mcp:
        await mcp.list_tools()
    assert server.jwks.fetches == fetched  # the key set is kept
    rotated = Signer(ISSUER, "key-2")
    server.jwks.document = jwks(rotated)
    await asyncio.sleep(10.5)  # an unknown kid is fetched for at most every 10 seconds
    async with http_session(server.url, token=rotated.token(aud=server.resource)) as mcp:
        assert len((await mcp.list_tools()).tools) == 6
    assert server.jwks.fetches == fetched + 1


async def test_an_approval_waits_over_streamable_http_at_2025_11_25_and_the_principal_decides(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
    profiled: Deployment,
    worker: None,
    client: Client,
) -> None:
    server = serve_protected(
        spawn,
        tmp_path,
        address,
        deployment,
        jwks_server,
        static=False,
        mcp="approve_via_elicitation = true",
    )
    token = server.signer.token(aud=server.resource, sub="bob", scope="tools:store")
    recorder = Recorder(accept({"decision": "approve", "reason": "mine"}))
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=recorder.elicit) as mcp,
    ):
        opened = await mcp.initialize()
        assert opened.protocol_version == "2025-11-25"
        result = await mcp.call_tool(
            "set_value", {"key": "colour", "value": '"red"'}, progress_callback=recorder.on_progress
        )
    assert not result.is_error, text_of(result)
    [form] = recorder.forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.message.startswith("Approve this set_value call?")
    assert any(m.startswith("waiting for approval") for m in recorder.progress), recorder.progress
    recorded = await client.get_workflow_handle_for(
        ToolCallWorkflow.run, workflow_of(result)
    ).result()
    assert recorded.approval is not None
    assert (recorded.approval.approver, recorded.approval.reason) == (
        f"oauth:{ISSUER}#bob",
        "mine",
    )


async def test_a_session_is_bound_to_the_token_that_opened_it(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
) -> None:
    server = serve_protected(spawn, tmp_path, address, deployment, jwks_server)
    alice = server.signer.token(aud=server.resource, sub="alice")
    mallory = server.signer.token(aud=server.resource, sub="mallory")
    base = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}

    def as_(token: str, session: str | None = None) -> dict[str, str]:
        extra = {"mcp-session-id": session} if session else {}
        return {**base, "Authorization": f"Bearer {token}", **extra}

    async with httpx.AsyncClient(timeout=30) as http:
        opened = await http.post(server.url, json=INITIALIZE, headers=as_(alice))
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        assert (
            await http.post(server.url, json=done, headers=as_(alice, session))
        ).status_code == 202
        taken = await http.post(server.url, json=listing, headers=as_(mallory, session))
        static = await http.post(server.url, json=listing, headers=as_(TOKEN, session))
        own = await http.post(server.url, json=listing, headers=as_(alice, session))
    for refused in (taken, static):
        assert refused.status_code == 403
        assert refused.json() == {"error": "the session belongs to another client"}
    assert own.status_code == 200, own.text
    assert "calculator" in own.text


async def test_a_2026_client_is_held_to_its_token_s_profile_too(
    spawn: Spawn,
    tmp_path: Path,
    address: str,
    deployment: Deployment,
    jwks_server: tuple[Signer, JwksServer],
    profiled: Deployment,
    worker: None,
    client: Client,
) -> None:
    server = serve_protected(spawn, tmp_path, address, deployment, jwks_server, static=False)
    token = server.signer.token(aud=server.resource, sub="carol", scope="tools:calc")
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        mcp_sdk.Client(streamable_http_client(server.url, http_client=http)) as modern,
    ):
        assert modern.protocol_version == "2026-07-28"
        listed = await modern.list_tools()
        product = await modern.call_tool("calculator", {"expression": "3 * 3"})
        with pytest.raises(MCPError, match="unknown tool 'set_value'; available: calculator, "):
            await modern.call_tool("set_value", {"key": "k", "value": "1"})
    assert [tool.name for tool in listed.tools] == ["calculator", "current_datetime"]
    view = await ToolCallClient(client, task_queue=deployment.task_queue).status(
        workflow_of(product)
    )
    assert view.metadata["mcp_user"] == f"oauth:{ISSUER}#carol"
