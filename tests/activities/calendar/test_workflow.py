"""The calendar tools through a real ``ToolCallWorkflow`` on a real server.

Under the default ceiling a listing runs at once and a creation waits for an approval whose
preview shows the exact event and the identity it is created under; invalid arguments end at
plan. The access token reaches the service and nothing else: not the preview, the result or the
workflow's history.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.activities.calendar.conftest import Radicale
from tests.support.calendars import (
    PASSWORD,
    PASSWORD_ENV,
    TOKEN,
    USER,
    ServiceReplay,
    google_event,
    google_page,
    json_answer,
)
from tests.support.harness import decision, make_config, pending_approval, start_call
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from toolcalls.activities.calendar import CalendarTools
from toolcalls.activities.calendar.tokens import creation_id
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode

TOOLS = [*ALL_TOOL_NAMES, "list_calendar_events", "create_calendar_event"]
WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
LUNCH = {
    "title": "Lunch with Bob",
    "start": "2026-01-07T12:00:00+01:00",
    "end": "2026-01-07T13:00:00+01:00",
    "description": "Plans",
    "location": "Café",
}
GOOGLE = {"backend": "google", "token_env": "TOOLCALLS_TEST_CALENDAR_TOKEN", "account": "me@x.test"}
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED


@asynccontextmanager
async def google_worker(
    client: Client, task_queue: str, replay: ServiceReplay, **sections: Any
) -> AsyncIterator[None]:
    """A worker whose calendar tools reach Google through ``replay``."""
    config = make_config(task_queue, tools=TOOLS, calendar=GOOGLE, **sections)
    tools = replay.tools(backend="google", account="me@x.test")
    worker = build_worker(
        client,
        config,
        families=ALL_FAMILIES,
        instances={ProbeTools: ProbeTools(), CalendarTools: tools},
    )
    async with worker:
        yield


async def history_text(handle: Any) -> str:
    return json.dumps((await handle.fetch_history()).to_json_dict())


async def test_a_listing_runs_at_once(client: Client, task_queue: str) -> None:
    event = google_event("e1", "Standup", "2026-01-05T09:00:00+01:00", "2026-01-05T09:15:00+01:00")
    replay = ServiceReplay().then(google_page([event], next_token="next-1"))
    async with google_worker(client, task_queue, replay):
        handle = await start_call(client, task_queue, "list_calendar_events", WEEK)
        result = await asyncio.wait_for(handle.result(), 30)
        history = await history_text(handle)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is None
    assert result.output is not None
    assert result.output["items"] == [event]
    assert result.output["next_page_token"].startswith("cal1.")
    assert replay.last.headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in history
    assert TOKEN not in result.model_dump_json()


async def test_a_creation_waits_for_an_approval_of_the_exact_event(
    client: Client, task_queue: str
) -> None:
    replay = ServiceReplay()
    async with google_worker(client, task_queue, replay):
        handle = await start_call(client, task_queue, "create_calendar_event", LUNCH)
        pending = await pending_approval(handle)
        assert replay.requests == []  # nothing is sent before the approval
        identity = creation_id(f"{handle.id}:{handle.id}")
        replay.then(
            json_answer(200, google_event(identity, LUNCH["title"], LUNCH["start"], LUNCH["end"]))
        )
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await asyncio.wait_for(handle.result(), 30)
        history = await history_text(handle)
    assert pending.capabilities == ["calendar.write"]
    [preview] = pending.preview
    assert preview.kind == "calendar_event"
    assert preview.data == {
        "backend": "google",
        "account": "me@x.test",
        "calendar": "primary",
        "title": "Lunch with Bob",
        "start": "2026-01-07T12:00:00+01:00",
        "end": "2026-01-07T13:00:00+01:00",
        "start_utc": "2026-01-07T11:00:00Z",
        "end_utc": "2026-01-07T12:00:00Z",
        "description": "Plans",
        "location": "Café",
        "creation_id": identity,
        "creation_id_is": "Google event id",
    }
    assert preview.text is not None
    assert identity in preview.text
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.output is not None
    assert (result.output["creation_id"], result.output["id"]) == (identity, identity)
    assert replay.sent_json()["id"] == identity
    assert replay.last.headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in history


async def test_a_denied_creation_sends_nothing(client: Client, task_queue: str) -> None:
    replay = ServiceReplay()
    async with google_worker(client, task_queue, replay):
        handle = await start_call(client, task_queue, "create_calendar_event", LUNCH)
        pending = await pending_approval(handle)
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approved=False))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert replay.requests == []


async def test_a_deployment_may_allow_creations_without_an_approval(
    client: Client, task_queue: str
) -> None:
    replay = ServiceReplay().then(
        lambda request: json_answer(200, {**json.loads(request.content), "status": "confirmed"})
    )
    ceiling = {"ceiling": {"rules": {"calendar.write": "allow"}, "default_effect": "allow"}}
    async with google_worker(client, task_queue, replay, **ceiling):
        handle = await start_call(client, task_queue, "create_calendar_event", LUNCH)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is None
    assert result.output is not None
    assert result.output["creation_id"] == creation_id(f"{handle.id}:{handle.id}")


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("create_calendar_event", {**LUNCH, "end": "2026-01-07T10:00:00+01:00"}, "end"),
        ("create_calendar_event", {**LUNCH, "start": "2026-01-07T12:00:00"}, "start"),
        ("create_calendar_event", {**LUNCH, "title": "Hi\r\nX-Injected: 1"}, "title"),
        ("list_calendar_events", {**WEEK, "max_results": 500}, "max_results"),
        ("list_calendar_events", {**WEEK, "page_token": "cal1.bm9wZQ"}, "page_token"),
    ],
)
async def test_invalid_arguments_end_at_plan(
    client: Client, task_queue: str, tool: str, arguments: dict[str, Any], field: str
) -> None:
    replay = ServiceReplay()
    async with google_worker(client, task_queue, replay):
        handle = await start_call(client, task_queue, tool, arguments)
        result = await asyncio.wait_for(handle.result(), 30)
        history = await handle.fetch_history()
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == [field]
    assert replay.requests == []
    assert [e for e in history.events if e.event_type == SCHEDULED] == []  # nothing prepared


async def test_an_approved_creation_on_a_real_caldav_server(
    client: Client, task_queue: str, radicale: Radicale, collection: str, password: str
) -> None:
    calendar = {
        "backend": "caldav",
        "url": collection,
        "username": USER,
        "password_env": PASSWORD_ENV,
    }
    config = make_config(task_queue, tools=TOOLS, calendar=calendar)
    async with build_worker(client, config, families=ALL_FAMILIES):
        handle = await start_call(client, task_queue, "create_calendar_event", LUNCH)
        pending = await pending_approval(handle)
        assert radicale.resources(collection) == []
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await asyncio.wait_for(handle.result(), 30)
        listed = await asyncio.wait_for(
            (await start_call(client, task_queue, "list_calendar_events", WEEK)).result(), 30
        )
        history = await history_text(handle)
    identity = creation_id(f"{handle.id}:{handle.id}")
    assert pending.preview[0].data is not None
    assert pending.preview[0].data["creation_id"] == identity
    assert result.status is CallStatus.COMPLETED
    assert radicale.resources(collection) == [f"{identity}.ics"]
    assert listed.output is not None
    assert [item["uid"] for item in listed.output["items"]] == [identity]
    assert PASSWORD not in history
