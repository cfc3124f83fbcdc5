"""Webhook deliveries a receiver can check for freshness, from real calls to a real receiver on
loopback: each post signed with its own time and a delivery id that its retries keep, verified by
an HMAC computed here and by the receiver docs/approvals.md gives; and a private address refused
without anything sent."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    running_worker,
    start_call,
    wait_for,
)
from tests.support.http_servers import LoopbackServer, Seen, serve, text
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, EventKind, Phase

ROOT = Path(__file__).resolve().parents[2]
SECRET = "webhook-secret-for-deliveries"
ENV = "TOOLCALLS_TEST_DELIVERY_SECRET"
REPLAY_WINDOW = 300
"""The window docs/approvals.md recommends: 5 minutes."""


class Receiver:
    """A webhook route: notes when each post arrives, answers ``statuses`` in turn, then 200."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.arrived: dict[tuple[str, str], float] = {}
        """(delivery id, timestamp) -> the receiver's clock when that post arrived."""

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        key = (handler.headers["X-Toolcalls-Delivery"], handler.headers["X-Toolcalls-Timestamp"])
        self.arrived[key] = time.time()
        text("ok", status=self.statuses.pop(0) if self.statuses else 200)(handler)

    def arrival(self, seen: Seen) -> float:
        return self.arrived[
            (seen.headers["x-toolcalls-delivery"], seen.headers["x-toolcalls-timestamp"])
        ]


def hmac_of(secret: str, seen: Seen) -> str:
    """The signature computed here over the documented string, not with the project's helper."""
    timestamp = seen.headers["x-toolcalls-timestamp"]
    delivery = seen.headers["x-toolcalls-delivery"]
    signed = b"v1:" + timestamp.encode() + b":" + delivery.encode() + b":" + seen.body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def docs_verifier() -> Any:
    """The ``WebhookVerifier`` docs/approvals.md gives receivers, run as it stands there."""
    page = (ROOT / "docs" / "approvals.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    [snippet] = [block for block in blocks if "class WebhookVerifier" in block]
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "docs/approvals.md", "exec"), namespace)
    assert namespace["REPLAY_WINDOW"] == REPLAY_WINDOW
    return namespace["WebhookVerifier"](SECRET)


async def posts(server: LoopbackServer, count: int) -> list[Seen]:
    for _ in range(600):
        if len(server.requests) >= count:
            return list(server.requests)
        await asyncio.sleep(0.05)
    raise AssertionError(f"{len(server.requests)} of {count} posts arrived")


def hook(server: LoopbackServer, **more: Any) -> dict[str, Any]:
    return {"name": "ops", "url": server.url("/hook"), **more}


async def test_each_post_is_signed_with_its_own_time_and_delivery_id(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, SECRET)
    receiver = Receiver()
    with serve({"/hook": receiver}) as server:
        config = make_config(
            task_queue,
            notifications={"webhooks": [hook(server, secret_env=ENV, allow_private_address=True)]},
            approvers={"rules": {"filesystem.write": {"remind_every_seconds": 1.5}}},
        )
        async with running_worker(client, config):
            handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
            pending = await pending_approval(handle)
            waiting, reminder = (await posts(server, 2))[:2]
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
            assert (await handle.result()).status is CallStatus.COMPLETED
    assert [json.loads(seen.body)["event"] for seen in (waiting, reminder)] == [
        "waiting",
        "reminder",
    ]
    for seen in (waiting, reminder):
        timestamp = seen.headers["x-toolcalls-timestamp"]
        delivery = seen.headers["x-toolcalls-delivery"]
        assert seen.headers["x-toolcalls-signature"] == hmac_of(SECRET, seen)
        assert seen.headers["x-toolcalls-signature"] != hmac_of("other", seen)
        assert re.fullmatch(r"[0-9]+", timestamp)
        assert re.fullmatch(r"[0-9a-f]{32}", delivery)
        # The time this post was sent, by the receiver's clock (the same machine's here).
        assert 0 <= receiver.arrival(seen) - int(timestamp) < 5
        body = json.loads(seen.body)
        assert body["delivery_id"] == delivery
        assert body["sent_at"] == datetime.fromtimestamp(int(timestamp), UTC).isoformat()
    # The reminder, 1.5 s later, is a delivery of its own with its own time, not the request's.
    assert reminder.headers["x-toolcalls-delivery"] != waiting.headers["x-toolcalls-delivery"]
    assert int(reminder.headers["x-toolcalls-timestamp"]) > int(
        waiting.headers["x-toolcalls-timestamp"]
    )
    assert int(reminder.headers["x-toolcalls-timestamp"]) > int(pending.requested_at.timestamp())

    # The receiver of docs/approvals.md takes each once and refuses a replay, however it comes.
    verifier = docs_verifier()
    now = receiver.arrival(waiting)
    assert verifier.verify(waiting.headers, waiting.body, now=now) is True
    assert verifier.verify(waiting.headers, waiting.body, now=now + 1) is False
    assert verifier.verify(reminder.headers, reminder.body, now=now + 2) is True
    late = docs_verifier()
    with pytest.raises(ValueError, match="replay window"):
        late.verify(waiting.headers, waiting.body, now=now + REPLAY_WINDOW + 5)
    tampered = [
        (waiting.headers, waiting.body.replace(b'"waiting"', b'"escalated"')),
        ({**waiting.headers, "x-toolcalls-timestamp": str(int(now) + 60)}, waiting.body),
        ({**waiting.headers, "x-toolcalls-delivery": "0" * 32}, waiting.body),
        ({**waiting.headers, "x-toolcalls-signature": "sha256=é"}, waiting.body),
    ]
    for headers, body in tampered:
        with pytest.raises(ValueError, match="bad signature"):
            docs_verifier().verify(headers, body, now=now)


async def test_a_retried_post_keeps_its_delivery_id(client: Client, task_queue: str) -> None:
    receiver = Receiver(500)
    with serve({"/hook": receiver}) as server:
        config = make_config(
            task_queue,
            notifications={"webhooks": [hook(server, allow_private_address=True)]},
        )
        async with running_worker(client, config):
            handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
            state = await wait_for(
                handle, lambda s: any(e.kind is EventKind.NOTIFIED for e in s.events)
            )
            await handle.terminate("test over")
    first, retry = server.requests
    assert [e.message for e in state.events if e.kind is EventKind.NOTIFIED] == ["waiting to ops"]
    assert not any(e.kind is EventKind.NOTIFICATION_FAILED for e in state.events)
    # The same notification, so the same id; sent again, so the time of that attempt.
    assert retry.headers["x-toolcalls-delivery"] == first.headers["x-toolcalls-delivery"]
    assert json.loads(retry.body)["delivery_id"] == first.headers["x-toolcalls-delivery"]
    assert int(retry.headers["x-toolcalls-timestamp"]) >= int(
        first.headers["x-toolcalls-timestamp"]
    )
    assert 0 <= receiver.arrival(retry) - int(retry.headers["x-toolcalls-timestamp"]) < 5
    assert "x-toolcalls-signature" not in retry.headers  # no secret_env: not signed


async def test_a_private_address_is_refused_without_allow_private_address(
    client: Client, task_queue: str
) -> None:
    with serve({"/hook": text("ok")}) as server:
        config = make_config(task_queue, notifications={"webhooks": [hook(server)]})
        async with running_worker(client, config):
            handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
            state = await wait_for(
                handle, lambda s: any(e.kind is EventKind.NOTIFICATION_FAILED for e in s.events)
            )
            # The refusal is the notification's; the call still waits for its decision.
            assert state.phase is Phase.AWAITING_APPROVAL
            assert state.pending_approval is not None
            await handle.execute_update(ToolCallWorkflow.decide, decision(state.pending_approval))
            result = await handle.result()
        assert server.requests == []
        assert server.connections == 0
    assert result.status is CallStatus.COMPLETED
    [failed] = [e.message for e in result.events if e.kind is EventKind.NOTIFICATION_FAILED]
    assert failed == (
        "waiting to ops: configuration_error: notify: ops: refused by the network guard: "
        "url: 127.0.0.1 is a loopback address"
    )
    # A typed, non-retryable error: one attempt, not three.
    history = await handle.fetch_history()
    started = [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    notify = [s for s in started if scheduled[s.scheduled_event_id] == "toolcalls.notify"]
    assert [s.attempt for s in notify] == [1]
    [failure] = [
        e.activity_task_failed_event_attributes.failure.application_failure_info
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    assert (failure.type, failure.non_retryable) == ("configuration_error", True)
