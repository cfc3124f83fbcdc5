"""Outlook / Microsoft 365 replayed at the transport seam, behind the production guard.

Answers are composed to Graph v1.0's documented format: ``calendarView`` pages with
``@odata.nextLink``, recurring occurrences, all-day events, errors; creation in UTC with a
``transactionId``. A next link from another host, collection or interval is refused.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError

from tests.support.calendars import (
    TOKEN,
    ServiceReplay,
    call,
    graph_event,
    graph_page,
    json_answer,
    run,
)
from toolcalls.activities.calendar.models import CreateCalendarEventArgs, ListCalendarEventsArgs
from toolcalls.activities.calendar.tokens import PageToken, creation_id
from toolcalls.workflows.models.call import ErrorCode

GRAPH = "https://graph.microsoft.com/v1.0"
WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
LUNCH = {
    "title": "Lunch with Bob",
    "start": "2026-01-07T12:00:00+01:00",
    "end": "2026-01-07T13:30:00+01:00",
    "description": "About the plan",
    "location": "Café",
}


def outlook(replay: ServiceReplay, **settings: Any) -> Any:
    return replay.tools(backend="outlook", **settings)


async def failure(coroutine: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        await coroutine
    return raised.value


def occurrence(day: int) -> dict[str, Any]:
    return graph_event(
        f"AAMk-occ-{day}",
        "Standup",
        f"2026-01-0{day}T08:00:00.0000000",
        f"2026-01-0{day}T08:15:00.0000000",
        type="occurrence",
        seriesMasterId="AAMk-series",
        bodyPreview="daily sync",
    )


def next_link(path: str = "/v1.0/me/calendar/calendarView", **params: str) -> str:
    query = {
        "startDateTime": "2026-01-04T23:00:00Z",
        "endDateTime": "2026-01-11T23:00:00Z",
        "$top": "2",
        "$skip": "2",
        **params,
    }
    return str(httpx.URL(f"https://graph.microsoft.com{path}", params=query))


async def test_a_listing_is_the_calendar_view_of_the_interval_in_utc() -> None:
    all_day = graph_event(
        "AAMk-holiday",
        "Holiday",
        "2026-01-06T00:00:00.0000000",
        "2026-01-07T00:00:00.0000000",
        isAllDay=True,
    )
    replay = ServiceReplay().then(graph_page([occurrence(5), all_day]))
    page = await run(
        outlook(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK, max_results=2)
    )
    sent = replay.last
    assert sent.url.copy_with(query=None) == httpx.URL(f"{GRAPH}/me/calendar/calendarView")
    params = sent.url.params
    assert (params["startDateTime"], params["endDateTime"]) == (
        "2026-01-04T23:00:00Z",
        "2026-01-11T23:00:00Z",
    )
    assert (params["$top"], params["$orderby"]) == ("2", "start/dateTime")
    assert "body" not in params["$select"].split(",")
    assert sent.headers["prefer"] == 'outlook.timezone="UTC"'
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert page.items == [occurrence(5), all_day]  # Graph's own fields
    assert page.next_page_token is None


async def test_an_explicit_user_and_calendar_are_path_segments() -> None:
    replay = ServiceReplay().then(graph_page([]))
    await run(
        outlook(replay, user_id="bob@example.com", calendar_id="AAMkAD/x==").list_calendar_events,
        ListCalendarEventsArgs(**WEEK),
    )
    assert replay.last.url.raw_path.startswith(
        b"/v1.0/users/bob%40example.com/calendars/AAMkAD%2Fx%3D%3D/calendarView?"
    )


async def test_the_query_filters_each_page_and_empty_pages_go_on() -> None:
    replay = ServiceReplay().then(
        graph_page([occurrence(5), graph_event("a", "Lunch", "x", "y")], next_link()),
        graph_page(
            [graph_event("b", "Review", "x", "y", location="Room STANDUP-free")],
            next_link(**{"$skip": "4"}),
        ),
        graph_page([graph_event("c", "1:1", "x", "y", bodyPreview="after the standup")]),
    )
    tools = outlook(replay)
    args = {**WEEK, "query": "standup", "max_results": 2}
    first = await run(tools.list_calendar_events, ListCalendarEventsArgs(**args))
    second = await run(
        tools.list_calendar_events,
        ListCalendarEventsArgs(**args, page_token=first.next_page_token),
    )
    third = await run(
        tools.list_calendar_events,
        ListCalendarEventsArgs(**args, page_token=second.next_page_token),
    )
    assert [item["id"] for item in first.items] == ["AAMk-occ-5"]  # subject
    assert [item["id"] for item in second.items] == ["b"]  # location, case-insensitive
    assert [item["id"] for item in third.items] == ["c"]  # body preview
    assert third.next_page_token is None
    assert str(replay.requests[1].url) == next_link()
    assert first.next_page_token is not None
    assert PageToken.decode(first.next_page_token).cursor == next_link()


async def test_an_empty_filtered_page_still_has_a_next_token() -> None:
    replay = ServiceReplay().then(graph_page([occurrence(5)], next_link()))
    page = await run(
        outlook(replay).list_calendar_events,
        ListCalendarEventsArgs(**WEEK, query="nothing matches", max_results=2),
    )
    assert page.items == []
    assert page.next_page_token is not None


@pytest.mark.parametrize(
    "link",
    [
        next_link().replace("graph.microsoft.com", "graph.evil.test"),
        next_link().replace("https:", "http:"),
        next_link(path="/v1.0/users/victim@example.com/calendar/calendarView"),
        next_link(path="/v1.0/me/calendars/other/calendarView"),
        next_link(path="/v1.0/me/messages"),
        next_link(endDateTime="2030-01-01T00:00:00Z"),
    ],
)
async def test_a_foreign_next_link_is_refused(link: str) -> None:
    replay = ServiceReplay().then(graph_page([occurrence(5)], link))
    error = await failure(
        run(outlook(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK, max_results=2))
    )
    assert error.type == ErrorCode.EXECUTION_FAILED.value
    assert "next-page link" in error.message
    assert len(replay.requests) == 1


async def test_a_forged_token_with_a_foreign_link_sends_nothing() -> None:
    replay = ServiceReplay().then(graph_page([occurrence(5)], next_link()))
    tools = outlook(replay)
    args = {**WEEK, "max_results": 2}
    first = await run(tools.list_calendar_events, ListCalendarEventsArgs(**args))
    assert first.next_page_token is not None
    real = PageToken.decode(first.next_page_token)
    forged = PageToken(
        real.scope, real.window, next_link(path="/v1.0/users/victim/calendar/calendarView")
    ).encode()
    error = await failure(
        run(tools.list_calendar_events, ListCalendarEventsArgs(**args, page_token=forged))
    )
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert error.details[0]["fixable_args"] == ["page_token"]
    assert len(replay.requests) == 1


async def test_a_token_of_another_user_is_refused() -> None:
    replay = ServiceReplay().then(graph_page([occurrence(5)], next_link()))
    first = await run(
        outlook(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK, max_results=2)
    )
    other = ServiceReplay()
    error = await failure(
        run(
            outlook(other, user_id="victim@example.com").list_calendar_events,
            ListCalendarEventsArgs(**WEEK, max_results=2, page_token=first.next_page_token),
        )
    )
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert other.requests == []


async def test_create_sends_utc_instants_and_the_identity_as_transaction_id() -> None:
    identity = creation_id("wf-2:toolu_9")
    answer = graph_event(
        "AAMk-new",
        LUNCH["title"],
        "2026-01-07T11:00:00.0000000",
        "2026-01-07T12:30:00.0000000",
        transactionId=identity,
    )
    replay = ServiceReplay().then(json_answer(201, answer))
    created = await run(
        outlook(replay).create_calendar_event,
        CreateCalendarEventArgs(**LUNCH),
        call("wf-2:toolu_9"),
    )
    assert str(replay.last.url) == f"{GRAPH}/me/calendar/events"
    assert replay.sent_json() == {
        "subject": "Lunch with Bob",
        "body": {"contentType": "text", "content": "About the plan"},
        "start": {"dateTime": "2026-01-07T11:00:00", "timeZone": "UTC"},
        "end": {"dateTime": "2026-01-07T12:30:00", "timeZone": "UTC"},
        "attendees": [],
        "transactionId": identity,
        "location": {"displayName": "Café"},
    }
    assert (created.id, created.creation_id, created.already_created) == (
        "AAMk-new",
        identity,
        False,
    )
    assert created.event == answer


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, ErrorCode.CONFIGURATION_ERROR),
        (403, ErrorCode.CONFIGURATION_ERROR),
        (404, ErrorCode.CONFIGURATION_ERROR),
        (409, ErrorCode.PRECONDITION_FAILED),
        (429, ErrorCode.EXECUTION_FAILED),
        (500, ErrorCode.UNCERTAIN),
        (504, ErrorCode.UNCERTAIN),
    ],
)
async def test_creation_errors(status: int, code: ErrorCode) -> None:
    body = {"error": {"code": "ErrorSomething", "message": "mailbox of alice@example.com"}}
    replay = ServiceReplay().then(json_answer(status, body))
    error = await failure(
        run(
            outlook(replay).create_calendar_event,
            CreateCalendarEventArgs(**LUNCH),
            call("wf-2:toolu_9"),
        )
    )
    assert error.type == code.value
    assert error.details[0]["output"]["creation_id"] == creation_id("wf-2:toolu_9")
    assert error.details[0]["output"]["status_code"] == status
    assert "alice" not in error.message
    assert len(replay.requests) == 1


async def test_a_created_event_without_an_id_is_uncertain() -> None:
    replay = ServiceReplay().then(json_answer(201, {"subject": "x"}))
    error = await failure(
        run(outlook(replay).create_calendar_event, CreateCalendarEventArgs(**LUNCH))
    )
    assert error.type == ErrorCode.UNCERTAIN.value


async def test_a_redirect_is_not_followed() -> None:
    moved = httpx.Response(307, headers={"Location": "https://login.evil.test/"})
    replay = ServiceReplay().then(moved)
    error = await failure(run(outlook(replay).list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert error.type == ErrorCode.EXECUTION_FAILED.value
    assert "redirects are not followed" in error.message
    assert len(replay.requests) == 1


def created_at(moment: str, identity: str, **more: Any) -> dict[str, Any]:
    """Graph's answer to the creation of LUNCH under ``identity``, made at ``moment``."""
    return graph_event(
        "AAMk-lunch",
        LUNCH["title"],
        "2026-01-07T11:00:00.0000000",
        "2026-01-07T12:30:00.0000000",
        transactionId=identity,
        createdDateTime=moment,
        lastModifiedDateTime=moment,
        **more,
    )


@pytest.mark.parametrize(
    ("made", "already_created"),
    [
        ("2026-01-07T09:14:58.1234567Z", True),  # an earlier attempt's event, a minute before
        ("2026-01-07T09:15:59.9734567Z", False),  # made by this request: the same second
        ("2026-01-07T09:16:00.4000000Z", False),  # a clock ahead of the Date's whole second
    ],
)
async def test_graphs_answer_to_a_repeated_transaction_id_is_the_event_it_holds(
    made: str, already_created: bool
) -> None:
    identity = creation_id("wf-2:toolu_9")
    answer = created_at(made, identity)
    # Graph answers a transactionId it holds with that event, 201, and creates nothing.
    replay = ServiceReplay().then(
        json_answer(201, answer, Date="Wed, 07 Jan 2026 09:16:00 GMT"),
    )
    created = await run(
        outlook(replay).create_calendar_event,
        CreateCalendarEventArgs(**LUNCH),
        call("wf-2:toolu_9"),
    )
    assert (created.id, created.creation_id) == ("AAMk-lunch", identity)
    assert created.already_created is already_created
    assert created.event == answer


async def test_without_a_date_a_creation_is_not_called_earlier() -> None:
    identity = creation_id("wf-2:toolu_9")
    replay = ServiceReplay().then(json_answer(201, created_at("2020-01-01T00:00:00Z", identity)))
    created = await run(
        outlook(replay).create_calendar_event,
        CreateCalendarEventArgs(**LUNCH),
        call("wf-2:toolu_9"),
    )
    assert created.already_created is False


@pytest.mark.parametrize(
    "other",
    [
        {"subject": "Someone else's"},
        {"start": {"dateTime": "2026-01-07T11:30:00.0000000", "timeZone": "UTC"}},
        {"end": {"dateTime": "2026-01-07T12:00:00", "timeZone": "UTC"}},
    ],
)
async def test_a_transaction_id_held_by_another_event_creates_nothing(
    other: dict[str, Any],
) -> None:
    identity = creation_id("wf-2:toolu_9")
    answer = {**created_at("2026-01-07T08:00:00Z", identity), **other}
    replay = ServiceReplay().then(json_answer(201, answer, Date="Wed, 07 Jan 2026 09:16:00 GMT"))
    error = await failure(
        run(
            outlook(replay).create_calendar_event,
            CreateCalendarEventArgs(**LUNCH),
            call("wf-2:toolu_9"),
        )
    )
    assert error.type == ErrorCode.PRECONDITION_FAILED.value
    assert identity in error.message
    assert "nothing was created" in error.message
    assert error.details[0]["output"] == {"creation_id": identity}
    assert len(replay.requests) == 1


async def test_an_answer_in_another_zone_is_judged_by_its_subject() -> None:
    identity = creation_id("wf-2:toolu_9")
    berlin = {"dateTime": "2026-01-07T12:00:00.0000000", "timeZone": "W. Europe Standard Time"}
    answer = {**created_at("2026-01-07T09:15:59Z", identity), "start": berlin}
    replay = ServiceReplay().then(json_answer(201, answer))
    created = await run(
        outlook(replay).create_calendar_event,
        CreateCalendarEventArgs(**LUNCH),
        call("wf-2:toolu_9"),
    )
    assert created.id == "AAMk-lunch"


async def test_an_event_with_another_transaction_id_is_uncertain() -> None:
    answer = created_at("2026-01-07T09:15:59Z", creation_id("wf-2:other"))
    replay = ServiceReplay().then(json_answer(201, answer))
    error = await failure(
        run(
            outlook(replay).create_calendar_event,
            CreateCalendarEventArgs(**LUNCH),
            call("wf-2:toolu_9"),
        )
    )
    assert error.type == ErrorCode.UNCERTAIN.value
    assert error.details[0]["output"]["creation_id"] == creation_id("wf-2:toolu_9")
