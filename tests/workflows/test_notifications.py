"""Notifications to real webhook receivers on loopback: bodies, signatures, Slack's format, and
a failing webhook that leaves the call unharmed."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    running_worker,
    start_call,
    wait_for,
)
from tests.support.http_servers import LoopbackServer, serve, text
from toolcalls.activities.notifications import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
)
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, EventKind

SECRET = "webhook-secret-for-tests"
ENV = "TOOLCALLS_TEST_WEBHOOK_SECRET"


def webhook(server: LoopbackServer, name: str, path: str = "/hook", **more: Any) -> dict[str, Any]:
    return {"name": name, "url": server.url(path), "allow_private_address": True, **more}


async def received(
    server: LoopbackServer, count: int, event: str | None = None
) -> list[dict[str, Any]]:
    """The bodies posted, once ``count`` have arrived (and, with ``event``, one of that event)."""
    for _ in range(600):
        bodies = [json.loads(seen.body) for seen in server.requests]
        if len(bodies) >= count and (event is None or any(b["event"] == event for b in bodies)):
            return bodies
        await asyncio.sleep(0.05)
    raise AssertionError(f"{len(server.requests)} of {count} notifications ({event}) arrived")


async def test_a_waiting_call_is_posted_signed_and_in_slacks_format(
    client: Client, task_queue: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv(ENV, SECRET)
    routes = {"/hook": text("ok"), "/slack": text("ok")}
    with serve(routes) as server:
        notifications = {
            "link": "https://inbox.example/calls/{workflow_id}",
            "webhooks": [
                webhook(server, "ops", secret_env=ENV),
                webhook(server, "chat", "/slack", format="slack"),
            ],
        }
        approvers = {
            "groups": {"ops": ["alice"]},
            "rules": {"filesystem.write": {"approvers": ["ops"]}},
        }
        config = make_config(task_queue, notifications=notifications, approvers=approvers)
        async with running_worker(client, config):
            handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
            pending = await pending_approval(handle)
            await received(server, 2)
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
            result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    by_path = {seen.path: seen for seen in server.requests}
    hook = by_path["/hook"]
    timestamp = hook.headers[TIMESTAMP_HEADER.lower()]
    delivery = hook.headers[DELIVERY_HEADER.lower()]
    body = json.loads(hook.body)
    assert body == {
        "event": "waiting",
        "workflow_id": handle.id,
        "call_id": handle.id,
        "tool": "probe_write",
        "capabilities": ["filesystem.write"],
        "preview": "change: +t\n",
        "approvers": ["ops"],
        "requested_at": pending.requested_at.isoformat(),
        "expires_at": pending.expires_at.isoformat() if pending.expires_at else None,
        "link": f"https://inbox.example/calls/{handle.id}",
        "delivery_id": delivery,
        "sent_at": datetime.fromtimestamp(int(timestamp), UTC).isoformat(),
    }
    # The receiver checks the signature with the shared secret over the string docs/approvals.md
    # gives (computed here, not with the project's helper).
    signed = f"v1:{timestamp}:{delivery}:".encode() + hook.body
    expected = hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
    assert hook.headers[SIGNATURE_HEADER.lower()] == f"sha256={expected}"
    slack = json.loads(by_path["/slack"].body)
    assert list(slack) == ["text"]
    assert "A tool call waits for approval: probe_write (filesystem.write)" in slack["text"]
    assert f"<https://inbox.example/calls/{handle.id}|Open the call>" in slack["text"]
    assert SIGNATURE_HEADER.lower() not in by_path["/slack"].headers
    notified = [e.message for e in result.events if e.kind is EventKind.NOTIFIED]
    assert sorted(notified) == ["waiting to chat", "waiting to ops"]
    # The secret is the worker's: it is nowhere in the call's history.
    history = await handle.fetch_history()
    assert SECRET not in history.to_json()


async def test_reminders_and_escalation_are_posted_too(client: Client, task_queue: str) -> None:
    with serve({"/hook": text("ok")}) as server:
        rule = {
            "approvers": ["alice"],
            "remind_every_seconds": 0.5,
            "escalate_after_seconds": 1.2,
            "escalate_to": ["carol"],
        }
        config = make_config(
            task_queue,
            notifications={"webhooks": [webhook(server, "ops")]},
            approvers={"rules": {"filesystem.write": rule}},
        )
        async with running_worker(client, config):
            handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
            pending = await pending_approval(handle)
            await wait_for(handle, lambda s: any(e.kind is EventKind.ESCALATED for e in s.events))
            # Reminders go on every 0.5 s: on a loaded machine more may land before the escalation.
            bodies = await received(server, 3, event="escalated")
            await handle.execute_update(
                ToolCallWorkflow.decide, decision(pending, approver="carol")
            )
            result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    events = [body["event"] for body in bodies]
    assert events[0] == "waiting"
    assert {"reminder", "escalated"} <= set(events)
    escalated = next(body for body in bodies if body["event"] == "escalated")
    assert escalated["approvers"] == ["alice", "carol"]


async def test_a_failing_webhook_never_blocks_or_fails_the_call(
    client: Client, task_queue: str
) -> None:
    with serve({"/hook": text("no", status=500)}) as server:
        config = make_config(task_queue, notifications={"webhooks": [webhook(server, "broken")]})
        async with running_worker(client, config) as probes:
            handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
            pending = await pending_approval(handle)
            # The call can be decided while the webhook is still being retried.
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
            result = await asyncio.wait_for(handle.result(), 30)
            assert result.status is CallStatus.COMPLETED
            assert probes.runs == {"probe_write": 1}
            # A second call waits long enough for every attempt to fail, and says so.
            other = await start_call(client, task_queue, "probe_write", {"token": "u"})
            state = await wait_for(
                other,
                lambda s: any(e.kind is EventKind.NOTIFICATION_FAILED for e in s.events),
                timeout=30,
            )
            failed = [e.message for e in state.events if e.kind is EventKind.NOTIFICATION_FAILED]
            assert failed[0].startswith("waiting to broken: ")
            assert "the receiver answered 500" in failed[0]
            assert len(server.requests) >= 1 + 3  # the first call's try, the second's three
            await other.terminate("test over")
