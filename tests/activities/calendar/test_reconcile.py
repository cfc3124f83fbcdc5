"""Looking an uncertain creation up by the identity the call gave its event: CalDAV on a real
Radicale (``<creation id>.ics``), Google (the event ``id``) and Graph (``transactionId``) answered
in their documented formats at the transport seam."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support import calendar_backend
from tests.support.calendars import (
    PASSWORD,
    PASSWORD_ENV,
    USER,
    ServiceReplay,
    call,
    google_event,
    json_answer,
    run,
)
from toolcalls.activities.calendar.models import CreateCalendarEventArgs
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.calendar.tokens import creation_id
from toolcalls.activities.calendar.tools import CalendarTools
from toolcalls.workflows.models.call import ErrorCode
from toolcalls.workflows.models.reconcile import Lookup, LookupInput

KEY = "wf-7:toolu_1"
IDENTITY = creation_id(KEY)
LUNCH = {
    "title": "Lunch with Bob",
    "start": "2026-01-07T12:00:00+01:00",
    "end": "2026-01-07T13:00:00+01:00",
}
EVENTS = "https://www.googleapis.com/calendar/v3/calendars/primary/events"


def uncertain(key: str = KEY, output: dict[str, Any] | None = None) -> LookupInput:
    workflow_id, _, call_id = key.partition(":")
    return LookupInput(
        workflow_id=workflow_id,
        call_id=call_id,
        tool="create_calendar_event",
        idempotency_key=key,
        output=output if output is not None else {"creation_id": creation_id(key)},
    )


async def lookup(tools: CalendarTools, call_input: LookupInput | None = None) -> Lookup:
    result: Lookup = await ActivityEnvironment().run(
        tools.reconcile_create_calendar_event, call_input or uncertain()
    )
    return result


def caldav(url: str) -> CalendarTools:
    return CalendarTools(
        CalendarSettings(backend="caldav", url=url, username=USER, password_env=PASSWORD_ENV),
        environ={PASSWORD_ENV: PASSWORD},
    )


async def test_caldav_finds_the_calls_resource_and_not_another_calls(collection: str) -> None:
    tools = caldav(collection)
    before = await lookup(tools)
    await run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH), call(KEY))

    after = await lookup(tools)
    other = await lookup(tools, uncertain("wf-7:toolu_2"))

    where = f"on {collection} (caldav)"
    assert before == Lookup(
        found=False,
        checked=f"looked up creation id {IDENTITY} (CalDAV resource name and UID) {where}: "
        "not there",
    )
    assert after.found is True
    assert after.evidence is not None
    assert after.evidence["uid"] == IDENTITY
    assert after.evidence["href"] == f"{httpx.URL(collection).path}{IDENTITY}.ics"
    assert after.evidence["etag"]
    assert other.found is False


async def test_google_reads_the_event_by_its_client_chosen_id() -> None:
    event = google_event(IDENTITY, "Lunch with Bob", LUNCH["start"], LUNCH["end"])
    replay = ServiceReplay().then(json_answer(200, event))
    found = await lookup(replay.tools(backend="google"))
    assert found.found is True
    assert found.evidence == {
        "creation_id": IDENTITY,
        "id": IDENTITY,
        "status": "confirmed",
        "htmlLink": event["htmlLink"],
    }
    assert replay.last.method == "GET"
    assert str(replay.last.url) == f"{EVENTS}/{IDENTITY}"


async def test_google_not_found_leaves_the_call_uncertain() -> None:
    missing = {"error": {"code": 404, "message": "Not Found", "errors": [{"reason": "notFound"}]}}
    replay = ServiceReplay().then(json_answer(404, missing))
    found = await lookup(replay.tools(backend="google"))
    assert found.found is False
    assert found.checked.endswith("(Google event id) on primary (google): not there")


async def test_graph_filters_the_calendar_s_events_on_transaction_id() -> None:
    body = {
        "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('me')/calendar/events",
        "value": [{"id": "AAMkAGI1AAA=", "subject": "Lunch with Bob", "transactionId": IDENTITY}],
    }
    replay = ServiceReplay().then(json_answer(200, body))
    found = await lookup(replay.tools(backend="outlook"))
    assert found.evidence == {
        "creation_id": IDENTITY,
        "id": "AAMkAGI1AAA=",
        "transactionId": IDENTITY,
    }
    request = replay.last
    assert request.url.path == "/v1.0/me/calendar/events"
    assert request.url.params["$filter"] == f"transactionId eq '{IDENTITY}'"

    empty = ServiceReplay().then(json_answer(200, {"value": []}))
    assert (await lookup(empty.tools(backend="outlook"))).found is False


async def test_a_recorded_identity_that_is_not_the_calls_own_is_refused() -> None:
    replay = ServiceReplay()
    with pytest.raises(ApplicationError) as caught:
        await lookup(replay.tools(backend="google"), uncertain(output={"creation_id": "abc"}))
    assert caught.value.type == ErrorCode.INVALID_ARGUMENTS.value
    assert caught.value.message == (
        "create_calendar_event: the call recorded a creation id that is not its own"
    )
    assert replay.requests == []


async def test_a_backend_of_the_deployments_own_is_looked_up_through_find_event() -> None:
    tools = CalendarTools(
        CalendarSettings(
            backend="tests.support.calendar_backend:MemoryCalendar", options={"name": "settle"}
        ),
        environ={},
    )
    before = await lookup(tools)
    created = await run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH), call(KEY))
    after = await lookup(tools)
    assert before.found is False
    assert after.evidence == {"creation_id": IDENTITY, "id": created.id}
    assert calendar_backend.CALENDARS["settle"].calls[-1] == (
        "find_event",
        {"creation_id": IDENTITY},
    )

    spec_only = CalendarTools(
        CalendarSettings(backend="tests.support.calendar_backend:SpecOnlyCalendar"), environ={}
    )
    with pytest.raises(ApplicationError) as caught:
        await lookup(spec_only)
    assert caught.value.type == ErrorCode.CONFIGURATION_ERROR.value
    assert caught.value.message == (
        "create_calendar_event: tests.support.calendar_backend:SpecOnlyCalendar has no "
        "find_event(creation_id=) method: its events cannot be looked up"
    )
