"""A request's ``notify`` webhook told when the call ends: a real call, a real receiver on
loopback, the signature checked here over the documented string and by docs/approvals.md's
receiver."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.harness import (
    history_types,
    make_config,
    pending_approval,
    running_worker,
    start_call,
)
from tests.support.http_servers import LoopbackServer, serve, text
from tests.support.inline import app_worker, inline_config, start_parent
from tests.support.parents import ParentInput
from tests.workflows.test_webhook_deliveries import ENV, SECRET, docs_verifier, hmac_of, posts
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, EventKind, ToolCallRequest, ToolCallResult


def deployment(task_queue: str, server: LoopbackServer) -> Any:
    hook = {
        "name": "app",
        "url": server.url("/done"),
        "secret_env": ENV,
        "allow_private_address": True,
    }
    return make_config(
        task_queue, ceiling={"default_effect": "allow"}, notifications={"webhooks": [hook]}
    )


async def test_a_call_that_ends_tells_its_notify_webhook_signed(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, SECRET)
    with serve({"/done": text("ok")}) as server:
        async with running_worker(client, deployment(task_queue, server)):
            handle = await start_call(
                client,
                task_queue,
                "calculator",
                {"expression": "6 * 7"},
                notify=server.url("/done"),
            )
            result: ToolCallResult = await handle.result()
            [seen] = await posts(server, 1)
            state = await handle.query(ToolCallWorkflow.status)
    assert result.status is CallStatus.COMPLETED
    assert seen.headers["x-toolcalls-signature"] == hmac_of(SECRET, seen)
    assert docs_verifier().verify(seen.headers, seen.body) is True
    body = json.loads(seen.body)
    assert body["event"] == "finished"
    assert (body["workflow_id"], body["tool"], body["status"]) == (
        handle.id,
        "calculator",
        "completed",
    )
    assert body["error"] is None
    assert body["delivery_id"] == seen.headers["x-toolcalls-delivery"]
    assert [e.message for e in state.events if e.kind is EventKind.NOTIFIED] == [
        f"finished to {server.url('/done')}"
    ]


async def test_a_canceled_call_tells_its_webhook_by_name_how_it_ended(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, SECRET)
    with serve({"/done": text("ok")}) as server:
        async with running_worker(client, deployment(task_queue, server)):
            handle = await start_call(
                client,
                task_queue,
                "calculator",
                {"expression": "1"},
                notify="app",
                policy={"tools": {"calculator": "require_approval"}},
            )
            await pending_approval(handle)
            await handle.cancel(reason="not needed")
            result = await handle.result()
            # Every webhook hears that the call waits; the one named in ``notify`` how it ended.
            arrived = {json.loads(post.body)["event"]: post for post in await posts(server, 2)}
    assert sorted(arrived) == ["finished", "waiting"]
    seen = arrived["finished"]
    assert result.status is CallStatus.CANCELED
    assert seen.headers["x-toolcalls-signature"] == hmac_of(SECRET, seen)
    body = json.loads(seen.body)
    assert (body["event"], body["status"]) == ("finished", "canceled")
    assert body["error"] == "canceled: the call was canceled: not needed"


async def test_a_notify_that_names_no_webhook_is_an_event_and_the_call_is_unchanged(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, SECRET)
    with serve({"/done": text("ok")}) as server:
        async with running_worker(client, deployment(task_queue, server)):
            handle = await start_call(
                client, task_queue, "calculator", {"expression": "2"}, notify="https://x.test/"
            )
            result = await asyncio.wait_for(handle.result(), 60)
            state = await handle.query(ToolCallWorkflow.status)
        await asyncio.sleep(0.5)
        assert server.requests == []
    assert result.status is CallStatus.COMPLETED
    [failed] = [e.message for e in state.events if e.kind is EventKind.NOTIFICATION_FAILED]
    assert "no webhook 'https://x.test/' on this worker" in failed


async def test_an_inline_call_that_names_a_notify_webhook_runs_as_a_child_that_tells_it(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, SECRET)
    with serve({"/done": text("ok")}) as server:
        hook = {"name": "app", "url": server.url("/done"), "secret_env": ENV}
        config = inline_config(
            task_queue,
            monkeypatch,
            notifications={"webhooks": [hook | {"allow_private_address": True}]},
        )
        both = [
            ToolCallRequest(tool="calculator", arguments={"expression": "1"}, call_id="plain"),
            ToolCallRequest(
                tool="calculator", arguments={"expression": "2"}, call_id="told", notify="app"
            ),
        ]
        async with running_worker(client, config), app_worker(client) as queue:
            parent = await start_parent(
                client,
                queue,
                ParentInput(task_queue=task_queue, batches=[[c] for c in both], inline=True),
            )
            output = await asyncio.wait_for(parent.result(), 60)
            [seen] = await posts(server, 1)
    assert [r.status for r in output.results] == [CallStatus.COMPLETED] * 2
    body = json.loads(seen.body)
    assert (body["workflow_id"], body["status"]) == (f"{parent.id}/tools/told", "completed")
    types = await history_types(parent)
    assert types.count(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED) == 1
