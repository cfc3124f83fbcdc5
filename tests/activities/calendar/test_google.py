"""Google Calendar replayed at the transport seam, behind the production guard.

Answers are composed to the documented format of ``events.list`` (singleEvents, orderBy
startTime, ``nextPageToken``) and ``events.insert`` (a client-chosen ``id``; 409 for one that
exists), including recurring instances, all-day events, errors, a redirect and an oversized body.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError

from tests.support.calendars import (
    TOKEN,
    TOKEN_ENV,
    ServiceReplay,
    call,
    google_event,
    google_page,
    json_answer,
    run,
)
from toolcalls.activities.calendar.models import CreateCalendarEventArgs, ListCalendarEventsArgs
from toolcalls.activities.calendar.tokens import PageToken, creation_id
from toolcalls.activities.network.service import MAX_RESPONSE_BYTES
from toolcalls.workflows.models.call import ErrorCode

EVENTS = "https://www.googleapis.com/calendar/v3/calendars/primary/events"
WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
LUNCH = {
    "title": "Lunch with Bob",
    "start": "2026-01-07T12:00:00+01:00",
    "end": "2026-01-07T13:00:00+01:00",
    "location": "Café",
}
REMOTE_SECRET = "Request had invalid authentication credentials for alice@example.com"


def google(replay: ServiceReplay, **settings: Any) -> Any:
    return replay.tools(backend="google", **settings)


async def failure(coroutine: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        await coroutine
    return raised.value


def standup(day: int) -> dict[str, Any]:
    """One instance of a recurring event, as singleEvents=true returns it."""
    return google_event(
        f"standup_2026010{day}T080000Z",
        "Standup",
        f"2026-01-0{day}T09:00:00+01:00",
        f"2026-01-0{day}T09:15:00+01:00",
        recurringEventId="standup",
        originalStartTime={"dateTime": f"2026-01-0{day}T09:00:00+01:00"},
    )


async def test_a_listing_asks_for_expanded_events_in_start_order() -> None:
    holiday = google_event("holiday", "Holiday", "2026-01-06", "2026-01-07", all_day=True)
    replay = ServiceReplay().then(google_page([standup(5), holiday, standup(6)]))
    page = await run(
        google(replay).list_calendar_events,
        ListCalendarEventsArgs(**WEEK, query="stand up", max_results=3),
    )
    sent = replay.last
    assert (sent.method, sent.url.copy_with(query=None)) == ("GET", httpx.URL(EVENTS))
    assert dict(sent.url.params) == {
        "timeMin": "2026-01-05T00:00:00+01:00",
        "timeMax": "2026-01-12T00:00:00+01:00",
        "singleEvents": "true",
        "orderBy": "startTime",
        "maxResults": "3",
        "q": "stand up",
    }
    assert b"timeMin=2026-01-05T00%3A00%3A00%2B01%3A00" in sent.url.query  # not a space
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    # The service's own fields, untouched: the recurring instance and the all-day boundaries.
    assert page.items == [standup(5), holiday, standup(6)]
    assert page.items[1]["start"] == {"date": "2026-01-06"}
    assert page.next_page_token is None


async def test_pages_carry_googles_token_bound_to_the_listing() -> None:
    replay = ServiceReplay().then(
        google_page([standup(5)], next_token="CiAKGjBpNDd2Nmp2"),
        google_page([], next_token="CiAKGjBpNDd2Nmp3"),  # an empty page can still go on
        google_page([standup(7)]),
    )
    tools = google(replay)
    first = await run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK, max_results=1))
    second = await run(
        tools.list_calendar_events,
        ListCalendarEventsArgs(**WEEK, max_results=1, page_token=first.next_page_token),
    )
    third = await run(
        tools.list_calendar_events,
        ListCalendarEventsArgs(**WEEK, max_results=1, page_token=second.next_page_token),
    )
    assert [len(p.items) for p in (first, second, third)] == [1, 0, 1]
    assert second.next_page_token is not None
    assert third.next_page_token is None
    assert "pageToken" not in replay.requests[0].url.params
    assert replay.requests[1].url.params["pageToken"] == "CiAKGjBpNDd2Nmp2"
    assert replay.requests[2].url.params["pageToken"] == "CiAKGjBpNDd2Nmp3"
    assert first.next_page_token is not None
    assert PageToken.decode(first.next_page_token).cursor == "CiAKGjBpNDd2Nmp2"


async def test_a_page_token_of_another_calendar_is_refused_before_anything_is_sent() -> None:
    replay = ServiceReplay().then(google_page([standup(5)], next_token="abc"))
    first = await run(
        google(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK, max_results=1)
    )
    other = ServiceReplay()
    error = await failure(
        run(
            google(other, calendar_id="team@group.calendar.google.com").list_calendar_events,
            ListCalendarEventsArgs(**WEEK, max_results=1, page_token=first.next_page_token),
        )
    )
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert error.details[0]["fixable_args"] == ["page_token"]
    assert other.requests == []


async def test_a_calendar_id_is_one_path_segment() -> None:
    replay = ServiceReplay().then(google_page([]))
    await run(
        google(replay, calendar_id="../../users/me/calendarList").list_calendar_events,
        ListCalendarEventsArgs(**WEEK),
    )
    assert replay.last.url.raw_path.startswith(
        b"/calendar/v3/calendars/..%2F..%2Fusers%2Fme%2FcalendarList/events?"
    )


async def test_create_sends_the_calls_identity_as_the_event_id() -> None:
    identity = creation_id("wf-1:toolu_1")
    inserted = google_event(identity, LUNCH["title"], LUNCH["start"], LUNCH["end"])
    replay = ServiceReplay().then(json_answer(200, inserted))
    created = await run(
        google(replay).create_calendar_event,
        CreateCalendarEventArgs(**LUNCH),
        call("wf-1:toolu_1"),
    )
    sent = replay.last
    assert (sent.method, str(sent.url)) == ("POST", EVENTS)
    assert replay.sent_json() == {
        "id": identity,
        "summary": "Lunch with Bob",
        "start": {"dateTime": "2026-01-07T12:00:00+01:00"},
        "end": {"dateTime": "2026-01-07T13:00:00+01:00"},
        "location": "Café",
    }
    assert (created.id, created.creation_id, created.already_created) == (
        identity,
        identity,
        False,
    )
    assert created.event == inserted
    assert len(identity) == 52
    assert set(identity) <= set("0123456789abcdefghijklmnopqrstuv")  # base32hex, as Google asks


async def test_an_id_google_already_holds_for_this_call_returns_that_event() -> None:
    identity = creation_id("wf-1:toolu_1")
    existing = google_event(
        identity, LUNCH["title"], "2026-01-07T11:00:00Z", "2026-01-07T12:00:00Z"
    )
    replay = ServiceReplay().then(
        json_answer(409, {"error": {"code": 409, "message": "The requested identifier exists."}}),
        json_answer(200, existing),
    )
    created = await run(
        google(replay).create_calendar_event,
        CreateCalendarEventArgs(**LUNCH),
        call("wf-1:toolu_1"),
    )
    assert [r.method for r in replay.requests] == ["POST", "GET"]
    assert str(replay.last.url) == f"{EVENTS}/{identity}"
    assert created.already_created is True
    assert created.event == existing


@pytest.mark.parametrize(
    "existing",
    [
        {"summary": "Someone else's", "start": "2026-01-07T12:00:00+01:00"},
        {"summary": "Lunch with Bob", "start": "2026-01-07T12:30:00+01:00"},
    ],
)
async def test_an_id_taken_by_another_event_creates_nothing(existing: dict[str, str]) -> None:
    identity = creation_id("wf-1:toolu_1")
    other = google_event(identity, existing["summary"], existing["start"], LUNCH["end"])
    replay = ServiceReplay().then(json_answer(409, {}), json_answer(200, other))
    error = await failure(
        run(
            google(replay).create_calendar_event,
            CreateCalendarEventArgs(**LUNCH),
            call("wf-1:toolu_1"),
        )
    )
    assert error.type == ErrorCode.PRECONDITION_FAILED.value
    assert error.details[0]["output"] == {"creation_id": identity}


async def test_this_calls_event_deleted_since_is_not_created_again() -> None:
    identity = creation_id("wf-1:toolu_1")
    gone = google_event(identity, LUNCH["title"], LUNCH["start"], LUNCH["end"], status="cancelled")
    replay = ServiceReplay().then(json_answer(409, {}), json_answer(200, gone))
    error = await failure(
        run(
            google(replay).create_calendar_event,
            CreateCalendarEventArgs(**LUNCH),
            call("wf-1:toolu_1"),
        )
    )
    assert error.type == ErrorCode.PRECONDITION_FAILED.value
    assert "deleted" in error.message
    assert len(replay.requests) == 2


def google_error(status: int, reason: str = "backendError", **headers: str) -> httpx.Response:
    body = {"error": {"code": status, "message": REMOTE_SECRET, "errors": [{"reason": reason}]}}
    return json_answer(status, body, **headers)


@pytest.mark.parametrize(
    ("answer", "code", "retryable"),
    [
        (google_error(401, "authError"), ErrorCode.CONFIGURATION_ERROR, False),
        (google_error(403, "insufficientPermissions"), ErrorCode.CONFIGURATION_ERROR, False),
        (google_error(403, "rateLimitExceeded"), ErrorCode.EXECUTION_FAILED, True),
        (google_error(404, "notFound"), ErrorCode.CONFIGURATION_ERROR, False),
        (
            google_error(429, "rateLimitExceeded", **{"Retry-After": "3"}),
            ErrorCode.EXECUTION_FAILED,
            True,
        ),
        (google_error(500), ErrorCode.EXECUTION_FAILED, True),
        (google_error(503), ErrorCode.EXECUTION_FAILED, True),
        (
            httpx.Response(302, headers={"Location": "https://evil.test/"}),
            ErrorCode.EXECUTION_FAILED,
            False,
        ),
    ],
)
async def test_listing_errors(answer: httpx.Response, code: ErrorCode, retryable: bool) -> None:
    replay = ServiceReplay().then(answer)
    error = await failure(run(google(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert (error.type, error.non_retryable) == (code.value, not retryable)
    assert error.details[0]["output"] == {"status_code": answer.status_code}
    assert len(replay.requests) == 1  # no automatic retry, no redirect followed
    assert "alice" not in error.message
    assert TOKEN not in error.message
    if answer.status_code == 404:
        assert "calendar.calendar_id" in error.message


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, ErrorCode.CONFIGURATION_ERROR),
        (403, ErrorCode.CONFIGURATION_ERROR),
        (404, ErrorCode.CONFIGURATION_ERROR),
        (429, ErrorCode.EXECUTION_FAILED),
        (500, ErrorCode.UNCERTAIN),
        (503, ErrorCode.UNCERTAIN),
    ],
)
async def test_creation_errors_name_the_identity(status: int, code: ErrorCode) -> None:
    replay = ServiceReplay().then(google_error(status))
    error = await failure(
        run(
            google(replay).create_calendar_event,
            CreateCalendarEventArgs(**LUNCH),
            call("wf-1:toolu_1"),
        )
    )
    assert error.type == code.value
    assert error.non_retryable  # a write is never retried
    assert error.details[0]["output"] == {
        "creation_id": creation_id("wf-1:toolu_1"),
        "status_code": status,
    }
    assert len(replay.requests) == 1


async def test_an_oversized_answer_is_cut_off_at_two_mebibytes() -> None:
    huge = {"items": [], "padding": "x" * MAX_RESPONSE_BYTES}
    replay = ServiceReplay().then(json_answer(200, huge))
    error = await failure(run(google(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert error.type == ErrorCode.OUTPUT_TOO_LARGE.value


async def test_an_answer_that_is_not_the_documented_shape() -> None:
    replay = ServiceReplay().then(json_answer(200, {"items": "nope"}))
    error = await failure(run(google(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert error.type == ErrorCode.EXECUTION_FAILED.value


async def test_the_token_is_read_when_the_call_runs() -> None:
    environ: dict[str, str] = {}
    replay = ServiceReplay().then(google_page([]))
    tools = google(replay, environ=environ)  # built with no token in the environment
    error = await failure(run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert error.type == ErrorCode.CONFIGURATION_ERROR.value
    assert TOKEN_ENV in error.message
    assert replay.requests == []
    environ[TOKEN_ENV] = "rotated-token"
    await run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK))
    assert replay.last.headers["authorization"] == "Bearer rotated-token"


async def test_the_first_heartbeat_reports_the_identity() -> None:
    identity = creation_id("wf-1:toolu_1")
    beats: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        # By the time the request leaves, the identity was reported.
        assert beats
        assert beats[0]["creation_id"] == identity
        return json_answer(200, google_event(identity, "x", LUNCH["start"], LUNCH["end"]))

    replay = ServiceReplay().then(answer)
    await run(
        google(replay).create_calendar_event,
        CreateCalendarEventArgs(**LUNCH),
        call("wf-1:toolu_1"),
        beats,
    )
    assert beats[0] == {
        "tool": "create_calendar_event",
        "creation_id": identity,
        "backend": "google",
        "calendar": "primary",
    }
    assert all(TOKEN not in str(beat) for beat in beats)


async def test_a_service_that_does_not_answer_in_time() -> None:
    async def silent(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")

    replay = ServiceReplay().then(silent, silent)
    tools = google(replay, timeout_seconds=0.3)
    listed = await failure(run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert (listed.type, listed.non_retryable) == (ErrorCode.TIMED_OUT.value, False)
    created = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    assert created.type == ErrorCode.UNCERTAIN.value
    assert created.details[0]["output"]["creation_id"] == creation_id("wf-1:call-1")
