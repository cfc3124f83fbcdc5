"""A configured HTTP API tool against a real recording service on loopback.

The family's methods run inside an activity (heartbeats need one); the service records every
request exactly as it arrived, so each test checks what reached it, and that nothing did when a
call is refused.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tests.support.http_api_servers import (
    RecordingAPI,
    Reply,
    call_context,
    recording_api,
    run_tool,
)
from tests.support.http_servers import closed_port, resetting
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES
from toolcalls.activities.network import guard as guard_module
from toolcalls.activities.network.guard import NetworkGuard, any_address
from toolcalls.activities.network.http_api import (
    USER_AGENT,
    HttpRequestArgs,
    HttpTools,
    arguments_model,
)
from toolcalls.activities.network.settings import HttpToolSettings
from toolcalls.workflows.models.approval import Prepared
from toolcalls.workflows.models.call import ErrorCode

SECRET = "s3cr3t-token-value"


def settings(api: RecordingAPI, **changes: Any) -> HttpToolSettings:
    values: dict[str, Any] = {
        "name": "app_api",
        "base_url": f"{api.origin}/api/v1",
        "allow_http": True,
        "allowed_methods": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        **changes,
    }
    return HttpToolSettings(**values)


def args(config: HttpToolSettings, **values: Any) -> HttpRequestArgs:
    return arguments_model(config).model_validate(values)


async def execute(tools: HttpTools, request: HttpRequestArgs, **context: Any) -> Any:
    return await run_tool(tools._execute, request, call_context(**context))


async def failure(tools: HttpTools, request: HttpRequestArgs, **context: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await execute(tools, request, **context)
    return caught.value


async def test_items_and_slash_items_both_address_the_base_path() -> None:
    with recording_api({"/api/v1/items": Reply(body=b"[]")}) as api:
        config = settings(api)
        tools = HttpTools(config, environ={})
        for path in ("items", "/items"):
            query = [{"name": "q", "value": "a&b"}, {"name": "n", "value": "10"}]
            result = await execute(tools, args(config, path=path, query=query))
            assert result.status_code == 200
            assert result.url == f"{api.origin}/api/v1/items?q=a%26b&n=10"
        assert [r.target for r in api.requests] == ["/api/v1/items?q=a%26b&n=10"] * 2
        assert [r.method for r in api.requests] == ["GET", "GET"]


async def test_an_escape_that_skipped_validation_is_still_refused_before_any_request() -> None:
    with recording_api({"/admin": Reply(body=b"{}")}) as api:
        config = settings(api)
        tools = HttpTools(config, environ={})
        for path in ("../admin", "//127.0.0.1/admin", "%2e%2e/admin", "https://evil.com/x"):
            error = await failure(tools, HttpRequestArgs.model_construct(path=path, method="GET"))
            assert error.type == ErrorCode.INVALID_ARGUMENTS
            assert error.message.startswith("app_api: path ")
        assert api.requests == []


async def test_secret_headers_come_from_the_environment_when_the_call_runs() -> None:
    environ = {"APP_TOKEN": f"Bearer {SECRET}"}
    with recording_api({"/api/v1/me": Reply(body=b'{"id": 7}')}) as api:
        config = settings(
            api,
            headers={"Accept": "application/json"},
            headers_from_env={"Authorization": "APP_TOKEN"},
        )
        tools = HttpTools(config, environ=environ)
        request = args(config, path="me")
        prepared = await run_tool(tools._prepare, request, call_context())
        result = await execute(tools, request)
        environ["APP_TOKEN"] = "Bearer rotated"
        await execute(tools, request)
    first, second = api.requests
    assert first.headers["authorization"] == f"Bearer {SECRET}"
    assert first.headers["accept"] == "application/json"
    assert first.headers["user-agent"] == USER_AGENT
    assert second.headers["authorization"] == "Bearer rotated"
    # Names only: the value is in neither the preview nor the result.
    assert prepared.preview[0].data is not None
    assert prepared.preview[0].data["header_names"] == ["Accept", "Authorization", "User-Agent"]
    assert SECRET not in prepared.model_dump_json()
    assert SECRET not in result.model_dump_json()
    assert result.body == {"id": 7}


async def test_an_idempotency_key_with_any_characters_becomes_a_valid_header() -> None:
    with recording_api({"/api/v1/items": Reply(status=201)}) as api:
        config = settings(api, idempotency_header="Idempotency-Key")
        tools = HttpTools(config, environ={})
        for call_id in ("appel-é 1", "a\r\nX-Evil: 1"):
            await execute(tools, args(config, method="POST", path="items"), call_id=call_id)
    first, second = api.requests
    assert first.headers["idempotency-key"] == "wf-http:appel-%C3%A9%201"
    assert second.headers["idempotency-key"] == "wf-http:a%0D%0AX-Evil:%201"
    assert "x-evil" not in second.headers


@pytest.mark.parametrize("environ", [{}, {"APP_TOKEN": ""}, {"APP_TOKEN": "a\r\nX-Evil: 1"}])
async def test_a_missing_or_bad_secret_is_a_configuration_error_and_sends_nothing(
    environ: dict[str, str],
) -> None:
    with recording_api() as api:
        config = settings(api, headers_from_env={"Authorization": "APP_TOKEN"})
        tools = HttpTools(config, environ=environ)
        error = await failure(tools, args(config, path="me"))
        assert error.type == ErrorCode.CONFIGURATION_ERROR
        assert "APP_TOKEN" in error.message
        assert "Authorization" in error.message
        assert "X-Evil" not in error.message
        with pytest.raises(ApplicationError, match="APP_TOKEN"):
            await run_tool(tools._prepare, args(config, path="me"), call_context())
        assert api.requests == []


async def test_writes_carry_the_idempotency_key_and_the_exact_json_body() -> None:
    with recording_api({"/api/v1/items": Reply(status=201, body=b'{"id": 1}')}) as api:
        config = settings(api, idempotency_header="Idempotency-Key")
        tools = HttpTools(config, environ={})
        created = await execute(
            tools, args(config, method="POST", path="items", body='{"name": "é", "n": [1, 2]}')
        )
        await execute(tools, args(config, path="items"))
        await execute(tools, args(config, method="DELETE", path="items"))
    post, get, delete = api.requests
    assert created.status_code == 201
    assert created.body == {"id": 1}
    assert post.body == '{"name":"é","n":[1,2]}'.encode()
    assert post.headers["content-type"] == "application/json"
    assert post.headers["idempotency-key"] == "wf-http:toolu_http"
    assert "idempotency-key" not in get.headers
    assert delete.headers["idempotency-key"] == "wf-http:toolu_http"
    assert delete.body == b""
    assert "content-type" not in delete.headers


async def test_the_preview_shows_method_url_query_and_body_exactly() -> None:
    with recording_api() as api:
        config = settings(api, idempotency_header="Idempotency-Key")
        tools = HttpTools(config, environ={})
        query = [{"name": "v", "value": "2"}, {"name": "v", "value": "1"}]
        request = args(config, method="PUT", path="/items/7", query=query, body={"a": None})
        prepared: Prepared = await run_tool(tools._prepare, request, call_context())
        assert api.requests == []
    (preview,) = prepared.preview
    url = f"{api.origin}/api/v1/items/7?v=2&v=1"
    assert preview.kind == "http_request"
    assert preview.title == f"PUT {url}"
    assert preview.text == '{"a":null}'
    assert preview.data is not None
    assert preview.data["query"] == [{"name": "v", "value": "2"}, {"name": "v", "value": "1"}]
    assert preview.data["header_names"] == ["Content-Type", "Idempotency-Key", "User-Agent"]
    assert prepared.precondition == {
        "method": "PUT",
        "url": url,
        "body_sha256": preview.data["body_sha256"],
    }


async def test_an_approval_binds_the_url_the_preview_showed() -> None:
    with recording_api() as api, recording_api() as moved:
        request = args(settings(api), method="POST", path="items", body=1)
        prepared = await run_tool(
            HttpTools(settings(api), environ={})._prepare, request, call_context()
        )
        redeployed = HttpTools(settings(moved), environ={})
        error = await failure(redeployed, request, precondition=prepared.precondition)
        assert error.type == ErrorCode.PRECONDITION_FAILED
        assert moved.requests == []
        assert api.requests == []


async def test_redirects_are_returned_not_followed() -> None:
    with recording_api({"/steal": Reply(body=b"{}")}) as other:
        location = f"{other.origin}/steal"
        routes = {"/api/v1/old": Reply(status=302, headers={"Location": location}, body=b"")}
        with recording_api(routes) as api:
            config = settings(api, headers_from_env={"Authorization": "APP_TOKEN"})
            tools = HttpTools(config, environ={"APP_TOKEN": SECRET})
            result = await execute(tools, args(config, path="old"))
        assert result.status_code == 302
        assert result.headers["location"] == location
        assert len(api.requests) == 1
        assert other.requests == []


async def test_selected_headers_only() -> None:
    headers = {
        "ETag": '"v1"',
        "Retry-After": "5",
        "Set-Cookie": "session=abc",
        "Link": "<https://x/?page=2>; rel=next",
        "X-Internal": "zzz",
    }
    with recording_api({"/api/v1/x": Reply(status=429, body=b"{}", headers=headers)}) as api:
        config = settings(api)
        result = await execute(HttpTools(config, environ={}), args(config, path="x"))
    assert result.status_code == 429
    assert result.headers == {
        "content-type": "application/json",
        "etag": '"v1"',
        "retry-after": "5",
        "link": "<https://x/?page=2>; rel=next",
    }


@pytest.mark.parametrize(
    ("content_type", "raw", "encoding", "body"),
    [
        ("application/json", b'{"a": [1, 2.5, null]}', "json", {"a": [1, 2.5, None]}),
        ("application/problem+json", b'{"title": "x"}', "json", {"title": "x"}),
        ("application/json", b"null", "json", None),
        ("application/json", b"{not json", "text", "{not json"),
        ("text/plain; charset=iso-8859-1", "café".encode("latin-1"), "text", "café"),
        ("text/html", "<p>é</p>".encode(), "text", "<p>é</p>"),
        ("application/xml", b"<a/>", "text", "<a/>"),
        ("text/plain", b"\xff\xfe\x00bad", "base64", base64.b64encode(b"\xff\xfe\x00bad").decode()),
        ("image/png", b"\x89PNG\r\n", "base64", base64.b64encode(b"\x89PNG\r\n").decode()),
        (None, b"plain", "text", "plain"),
    ],
)
async def test_body_encodings(
    content_type: str | None, raw: bytes, encoding: str, body: Any
) -> None:
    reply = Reply(body=raw, content_type=content_type)
    with recording_api({"/api/v1/x": reply}) as api:
        config = settings(api)
        result = await execute(HttpTools(config, environ={}), args(config, path="x"))
    assert (result.body_encoding, result.body, result.truncated) == (encoding, body, False)
    assert result.body_bytes == len(raw)
    assert result.untrusted_content is True


async def test_head_returns_headers_and_an_empty_body() -> None:
    with recording_api({"/api/v1/x": Reply(body=b'{"a": 1}')}) as api:
        config = settings(api)
        result = await execute(HttpTools(config, environ={}), args(config, method="HEAD", path="x"))
    assert (result.status_code, result.body, result.body_encoding) == (200, "", "text")
    assert api.requests[0].method == "HEAD"


async def test_the_response_limit_applies_to_the_decoded_body() -> None:
    routes = {"/api/v1/fit": Reply(body=b"x" * 1_000), "/api/v1/big": Reply(body=b"x" * 1_001)}
    with recording_api(routes) as api:
        config = settings(api, max_response_bytes=1_000)
        tools = HttpTools(config, environ={})
        fits = await execute(tools, args(config, path="fit"))
        assert fits.body_bytes == 1_000
        error = await failure(tools, args(config, path="big"))
    assert error.type == ErrorCode.OUTPUT_TOO_LARGE
    assert "1000" in error.message


async def test_a_write_answered_with_too_much_says_the_service_answered() -> None:
    routes = {"/api/v1/orders": Reply(status=201, body=b"x" * 1_001)}
    with recording_api(routes) as api:
        config = settings(api, max_response_bytes=1_000, allowed_methods=["GET", "POST"])
        tools = HttpTools(config, environ={})
        error = await failure(tools, args(config, method="POST", path="orders", body={"n": 1}))
    assert error.type == ErrorCode.OUTPUT_TOO_LARGE
    assert error.message.endswith("(the service answered 201)")
    assert error.details[0]["output"] == {"status_code": 201}
    assert len(api.requests) == 1


async def test_a_large_binary_body_is_cut_to_fit_the_result_payload() -> None:
    raw = bytes(range(256)) * 4_096  # 1 MiB: 1.4 MB as base64
    reply = Reply(body=raw, content_type="application/octet-stream")
    with recording_api({"/api/v1/blob": reply}) as api:
        config = settings(api)
        result = await execute(HttpTools(config, environ={}), args(config, path="blob"))
    assert result.body_encoding == "base64"
    assert result.truncated is True
    assert result.body_bytes == len(raw)
    assert raw.startswith(base64.b64decode(result.body))
    assert len(result.model_dump_json().encode()) < MAX_PAYLOAD_BYTES


async def test_escaped_text_and_large_json_are_cut_to_fit() -> None:
    routes = {
        "/api/v1/ctl": Reply(body=b"\x01" * 1_000_000, content_type="text/plain"),
        "/api/v1/json": Reply(body=json.dumps(["\x01" * 170_000]).encode()),
    }
    with recording_api(routes) as api:
        config = settings(api)
        tools = HttpTools(config, environ={})
        for path in ("ctl", "json"):
            result = await execute(tools, args(config, path=path))
            assert result.body_encoding == "text"
            assert result.truncated is True
            assert len(result.model_dump_json().encode()) < MAX_PAYLOAD_BYTES


async def test_a_slow_read_times_out_and_a_slow_write_is_uncertain() -> None:
    with recording_api({"/api/v1/slow": Reply(body=b"{}", delay=1.5)}) as api:
        config = settings(api, timeout_seconds=0.3)
        tools = HttpTools(config, environ={})
        read = await failure(tools, args(config, path="slow"))
        write = await failure(tools, args(config, method="POST", path="slow", body={}))
    assert read.type == ErrorCode.TIMED_OUT
    assert read.non_retryable is False
    assert write.type == ErrorCode.UNCERTAIN
    assert write.non_retryable is True
    assert "may have" in write.message
    assert [r.method for r in api.requests] == ["GET", "POST"]


async def test_a_refused_connection_is_an_outage_even_for_a_write() -> None:
    with closed_port() as port:
        config = HttpToolSettings(
            name="app_api",
            base_url=f"http://127.0.0.1:{port}/",
            allow_http=True,
            allowed_methods=["GET", "POST"],
        )
        tools = HttpTools(config, environ={})
        write = await failure(tools, args(config, method="POST", path="x", body=1))
        read = await failure(tools, args(config, path="x"))
    # Nothing was sent: not uncertain, and not the model's to fix; the same call may work later.
    for error in (write, read):
        assert error.type == ErrorCode.NETWORK_UNAVAILABLE
        assert error.non_retryable is False
        assert error.details[0]["fixable_args"] == []
        assert error.message == f"app_api: could not reach 127.0.0.1:{port} (connection refused)"


async def test_a_reset_is_an_outage_for_a_read_and_uncertain_for_a_write() -> None:
    with resetting() as server:
        config = HttpToolSettings(
            name="app_api",
            base_url=f"http://127.0.0.1:{server.port}/",
            allow_http=True,
            allowed_methods=["GET", "POST"],
        )
        tools = HttpTools(config, environ={})
        read = await failure(tools, args(config, path="x"))
        write = await failure(tools, args(config, method="POST", path="x", body=1))
    assert read.type == ErrorCode.NETWORK_UNAVAILABLE
    assert read.non_retryable is False
    assert "connection reset" in read.message
    # The request had been written when the service reset: it may have acted on it.
    assert write.type == ErrorCode.UNCERTAIN
    assert write.non_retryable is True
    assert [first.split(b" ", 1)[0] for first in server.received] == [b"GET", b"POST"]


async def test_a_name_that_does_not_exist_is_the_deployments_to_fix() -> None:
    async def resolve(host: str, port: int) -> list[Any]:
        code = socket.EAI_NONAME if host == "typo.test" else socket.EAI_AGAIN
        raise socket.gaierror(code, "lookup failed")

    guarded = NetworkGuard(resolver=resolve, admit=any_address, allowed_ports=None)
    typo = HttpToolSettings(name="app_api", base_url="https://typo.test/")
    down = HttpToolSettings(name="app_api", base_url="https://down.test/")
    missing = await failure(HttpTools(typo, guard=guarded, environ={}), args(typo, path="x"))
    outage = await failure(HttpTools(down, guard=guarded, environ={}), args(down, path="x"))
    assert missing.type == ErrorCode.CONFIGURATION_ERROR
    assert missing.message == "app_api: url: host typo.test does not resolve (no such name)"
    assert outage.type == ErrorCode.NETWORK_UNAVAILABLE
    assert outage.non_retryable is False


async def test_a_write_that_times_out_before_it_is_sent_is_not_uncertain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The service accepts the connection and never completes the TLS handshake: the deadline runs
    # out before a byte of the request is written, so the service cannot have applied it.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        config = HttpToolSettings(
            name="app_api",
            base_url=f"https://127.0.0.1:{silent.getsockname()[1]}/",
            allowed_methods=["GET", "POST"],
            timeout_seconds=0.3,
        )
        write = await failure(
            HttpTools(config, environ={}), args(config, method="POST", path="x", body=1)
        )
    assert write.type == ErrorCode.TIMED_OUT
    assert write.non_retryable is True

    # A lookup that runs out of time: nothing was sent either.
    async def stuck(host: str, port: int) -> list[Any]:
        await asyncio.sleep(5)
        return []

    monkeypatch.setattr(guard_module, "DNS_TIMEOUT_SECONDS", 0.2)
    config = HttpToolSettings(
        name="app_api", base_url="https://api.test/", allowed_methods=["GET", "POST"]
    )
    guarded = NetworkGuard(resolver=stuck, admit=any_address, allowed_ports=None)
    write = await failure(
        HttpTools(config, guard=guarded, environ={}), args(config, method="POST", path="x", body=1)
    )
    # The resolver did not answer: an outage, and nothing was sent.
    assert write.type == ErrorCode.NETWORK_UNAVAILABLE
    assert write.message == "app_api: dns lookup of api.test timed out"
