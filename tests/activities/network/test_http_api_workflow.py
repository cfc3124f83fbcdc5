"""A configured HTTP API tool through a real ``ToolCallWorkflow`` on a real server.

Under the default ceiling a GET runs at once and a POST waits for an approval whose preview shows
the exact request; the secret header reaches the service and nothing else: not the preview, the
result or the workflow's history.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
)
from tests.support.http_api_servers import RecordingAPI, Reply, recording_api
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.activities.network import NETWORK
from toolcalls.worker.config import Config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, CapabilityPolicy, Effect, ErrorCode

SECRET = "wf-s3cr3t-value"
ROUTES = {
    "/api/v1/items": Reply(body=b'[{"id": 1}]'),
    "/api/v1/orders": Reply(status=201, body=b'{"order": 9}'),
}


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """The worker reads header secrets from its own environment when a call runs."""
    monkeypatch.setenv("TOOLCALLS_TEST_API_TOKEN", SECRET)
    return SECRET


def http_config(task_queue: str, api: RecordingAPI, **sections: Any) -> Config:
    table = {
        "name": "shop_api",
        "base_url": f"{api.origin}/api/v1/",
        "allow_http": True,
        "allowed_methods": ["GET", "POST"],
        "headers_from_env": {"X-Api-Key": "TOOLCALLS_TEST_API_TOKEN"},
        "idempotency_header": "Idempotency-Key",
    }
    return make_config(task_queue, tools=[*ALL_TOOL_NAMES, "shop_api"], http=[table], **sections)


async def history_text(handle: Any) -> str:
    return json.dumps((await handle.fetch_history()).to_json_dict())


async def test_a_get_runs_at_once(client: Client, task_queue: str, secret: str) -> None:
    with recording_api(ROUTES) as api:
        async with running_worker(client, http_config(task_queue, api)):
            handle = await start_call(
                client,
                task_queue,
                "shop_api",
                {"path": "/items", "query": [{"name": "limit", "value": "1"}]},
            )
            result = await asyncio.wait_for(handle.result(), 30)
            history = await history_text(handle)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is None
    assert result.output is not None
    assert result.output["body"] == [{"id": 1}]
    assert result.output["body_encoding"] == "json"
    (arrived,) = api.requests
    assert (arrived.method, arrived.target) == ("GET", "/api/v1/items?limit=1")
    assert arrived.headers["x-api-key"] == secret
    assert "idempotency-key" not in arrived.headers
    assert secret not in history


async def test_a_post_waits_for_an_approval_of_the_exact_request(
    client: Client, task_queue: str, secret: str
) -> None:
    body = '{"sku": "A-1", "qty": 2}'  # JSON text, as a model sends it
    with recording_api(ROUTES) as api:
        async with running_worker(client, http_config(task_queue, api)):
            handle = await start_call(
                client, task_queue, "shop_api", {"method": "POST", "path": "orders", "body": body}
            )
            pending = await pending_approval(handle)
            assert api.requests == []
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
            result = await asyncio.wait_for(handle.result(), 30)
            history = await history_text(handle)
    assert pending.capabilities == ["network.write"]
    assert [artifact.kind for artifact in pending.preview] == ["http_request"]
    preview = pending.preview[0]
    assert preview.title == f"POST {api.origin}/api/v1/orders"
    assert preview.text == '{"sku":"A-1","qty":2}'
    assert preview.data is not None
    assert preview.data["header_names"] == [
        "Content-Type",
        "Idempotency-Key",
        "User-Agent",
        "X-Api-Key",
    ]
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "alice"
    assert result.output is not None
    assert (result.output["status_code"], result.output["body"]) == (201, {"order": 9})
    (arrived,) = api.requests
    assert arrived.method == "POST"
    assert arrived.body == b'{"sku":"A-1","qty":2}'
    assert arrived.headers["x-api-key"] == secret
    assert arrived.headers["idempotency-key"] == f"{handle.id}:{handle.id}"
    assert secret not in history


async def test_a_body_of_the_full_megabyte_goes_through_an_approval(
    client: Client, task_queue: str, secret: str
) -> None:
    body = json.dumps("x" * (1_048_576 - 2))  # the JSON string, quotes included, is 1 MiB
    with recording_api(ROUTES) as api:
        async with running_worker(client, http_config(task_queue, api)):
            handle = await start_call(
                client, task_queue, "shop_api", {"method": "POST", "path": "orders", "body": body}
            )
            pending = await pending_approval(handle)
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
            result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    (arrived,) = api.requests
    assert len(arrived.body) == 1_048_576


async def test_a_denied_post_sends_nothing(client: Client, task_queue: str, secret: str) -> None:
    with recording_api(ROUTES) as api:
        async with running_worker(client, http_config(task_queue, api)):
            handle = await start_call(
                client, task_queue, "shop_api", {"method": "POST", "path": "orders", "body": 1}
            )
            pending = await pending_approval(handle)
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approved=False))
            result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_DENIED
    assert api.requests == []


async def test_a_read_a_request_policy_holds_runs_once_approved(
    client: Client, task_queue: str, secret: str
) -> None:
    policy = CapabilityPolicy(rules={"network.read": Effect.REQUIRE_APPROVAL})
    with recording_api(ROUTES) as api:
        async with running_worker(client, http_config(task_queue, api)):
            handle = await start_call(
                client, task_queue, "shop_api", {"path": "items"}, policy=policy
            )
            pending = await pending_approval(handle)
            assert pending.capabilities == ["network.read"]
            assert pending.preview[0].title == f"GET {api.origin}/api/v1/items"
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
            result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert len(api.requests) == 1


BAD_ARGUMENTS: list[dict[str, Any]] = [
    {"path": "../admin"},
    {"path": "https://evil.com/x"},
    {"path": "%2e%2e/admin"},
    {"path": "items", "headers": {"Host": "evil.com"}},
    {"method": "DELETE", "path": "items"},
    {"path": "items", "body": {"a": 1}},
]


async def test_bad_arguments_end_the_call_at_plan_and_send_nothing(
    client: Client, task_queue: str, secret: str
) -> None:
    with recording_api(ROUTES) as api:
        config = http_config(task_queue, api, ceiling={"default_effect": "allow"})
        async with running_worker(client, config):
            results = await asyncio.gather(
                *(run_call(client, task_queue, "shop_api", args) for args in BAD_ARGUMENTS)
            )
    for arguments, result in zip(BAD_ARGUMENTS, results, strict=True):
        assert result.status is CallStatus.FAILED, arguments
        assert result.error is not None
        assert result.error.code is ErrorCode.INVALID_ARGUMENTS, arguments
        assert result.error.fixable_args, arguments
    assert api.requests == []


async def test_a_write_that_may_have_happened_is_uncertain_after_one_attempt(
    client: Client, task_queue: str, secret: str
) -> None:
    routes = {"/api/v1/orders": Reply(status=201, body=b"{}", delay=2)}
    with recording_api(routes) as api:
        config = http_config(task_queue, api, ceiling={"default_effect": "allow"})
        table = config.family_settings(NETWORK).http[0].model_copy(update={"timeout_seconds": 0.3})
        config = config.model_copy(update={"http": [table]})
        async with running_worker(client, config):
            handle = await start_call(
                client, task_queue, "shop_api", {"method": "POST", "path": "orders", "body": 1}
            )
            result = await asyncio.wait_for(handle.result(), 30)
            history = await handle.fetch_history()
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    scheduled = [
        event.activity_task_scheduled_event_attributes
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name == "shop_api"
    ]
    assert [attrs.retry_policy.maximum_attempts for attrs in scheduled] == [1]
    assert len(api.requests) == 1
