"""The CalDAV backend against a real CalDAV server (Radicale on loopback, with authentication).

Listing expands recurrences on the server and includes all-day events; pages follow a cursor
bound to the listing; a creation writes the call's resource with ``If-None-Match: *``, so the
same call twice leaves one event; a wrong password and a missing collection are the
deployment's to fix.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tests.activities.calendar.conftest import Radicale, TLSRadicale
from tests.support.calendars import (
    PASSWORD,
    PASSWORD_ENV,
    USER,
    call,
    ical,
    recurring,
    run,
    single,
)
from toolcalls.activities.calendar.models import CreateCalendarEventArgs, ListCalendarEventsArgs
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.calendar.tokens import PageToken, creation_id
from toolcalls.activities.calendar.tools import CalendarTools
from toolcalls.workflows.models.call import ErrorCode

WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
LUNCH = {
    "title": "Lunch with Bob",
    "start": "2026-01-07T12:00:00+01:00",
    "end": "2026-01-07T13:00:00+01:00",
    "description": "Discuss the plan; bring notes, please",
    "location": "Café Zürich",
}


def caldav(url: str, environ: dict[str, str] | None = None, **settings: Any) -> CalendarTools:
    return CalendarTools(
        CalendarSettings(
            backend="caldav", url=url, username=USER, password_env=PASSWORD_ENV, **settings
        ),
        environ={PASSWORD_ENV: PASSWORD} if environ is None else environ,
    )


async def listing(tools: CalendarTools, **args: Any) -> Any:
    return await run(tools.list_calendar_events, ListCalendarEventsArgs(**{**WEEK, **args}))


async def failure(coroutine: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        await coroutine
    return raised.value


@pytest.fixture
def stocked(radicale: Radicale, collection: str) -> str:
    """A calendar with a daily standup (10 days from Jan 3), a holiday and a one-off meeting."""
    radicale.put(collection, "standup.ics", recurring("standup", "Standup", "20260103T080000Z", 10))
    radicale.put(
        collection,
        "holiday.ics",
        single("holiday", "Holiday", ";VALUE=DATE:20260106", ";VALUE=DATE:20260107"),
    )
    radicale.put(
        collection,
        "review.ics",
        single(
            "review", "Design review", ":20260108T140000Z", ":20260108T150000Z", "LOCATION:Room 4"
        ),
    )
    radicale.put(  # outside the week
        collection, "later.ics", single("later", "Later", ":20260201T100000Z", ":20260201T110000Z")
    )
    return collection


async def test_a_week_lists_each_recurring_instance_and_the_all_day_event(stocked: str) -> None:
    page = await listing(caldav(stocked), max_results=100)
    summaries = [(item["summary"], item["start"]) for item in page.items]
    # Jan 5 00:00 +01:00 is Jan 4 23:00 UTC: the standups of Jan 5 to Jan 11, in start order.
    assert summaries == [
        ("Standup", "2026-01-05T08:00:00+00:00"),
        ("Holiday", "2026-01-06"),
        ("Standup", "2026-01-06T08:00:00+00:00"),
        ("Standup", "2026-01-07T08:00:00+00:00"),
        ("Standup", "2026-01-08T08:00:00+00:00"),
        ("Design review", "2026-01-08T14:00:00+00:00"),
        ("Standup", "2026-01-09T08:00:00+00:00"),
        ("Standup", "2026-01-10T08:00:00+00:00"),
        ("Standup", "2026-01-11T08:00:00+00:00"),
    ]
    assert page.next_page_token is None
    holiday = page.items[1]
    assert (holiday["all_day"], holiday["end"], holiday["uid"]) == (True, "2026-01-07", "holiday")
    standup = page.items[0]
    assert standup["recurrence_id"] == "2026-01-05T08:00:00+00:00"
    assert standup["end"] == "2026-01-05T08:15:00+00:00"
    assert standup["href"].endswith("/standup.ics")
    assert page.items[5]["location"] == "Room 4"


async def test_pages_continue_where_the_last_ended(stocked: str) -> None:
    tools = caldav(stocked)
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = await listing(tools, max_results=4, page_token=token)
        pages += 1
        seen += [f"{item['uid']} {item['start']}" for item in page.items]
        token = page.next_page_token
        if token is None:
            break
    assert pages == 3
    everything = await listing(tools, max_results=100)
    assert seen == [f"{item['uid']} {item['start']}" for item in everything.items]


async def test_query_matches_summary_description_or_location_case_insensitively(
    stocked: str,
) -> None:
    tools = caldav(stocked)
    by_location = await listing(tools, query="room 4")
    by_summary = await listing(tools, query="STANDUP", max_results=3)
    assert [item["uid"] for item in by_location.items] == ["review"]
    assert [item["uid"] for item in by_summary.items] == ["standup"] * 3
    assert by_summary.next_page_token is not None


async def test_a_page_token_of_another_calendar_is_refused(
    radicale: Radicale, stocked: str
) -> None:
    other = radicale.new_calendar()
    first = await listing(caldav(stocked), max_results=2)
    assert first.next_page_token is not None
    error = await failure(listing(caldav(other), max_results=2, page_token=first.next_page_token))
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert error.details[0]["fixable_args"] == ["page_token"]


async def test_a_forged_cursor_is_refused(stocked: str) -> None:
    tools = caldav(stocked)
    first = await listing(tools, max_results=2)
    assert first.next_page_token is not None
    real = PageToken.decode(first.next_page_token)
    forged = PageToken(real.scope, real.window, "not a cursor").encode()
    error = await failure(listing(tools, max_results=2, page_token=forged))
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert error.details[0]["fixable_args"] == ["page_token"]


async def test_create_writes_one_event_in_utc_under_the_calls_identity(
    radicale: Radicale, collection: str
) -> None:
    tools = caldav(collection)
    created = await run(
        tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH), call("wf-7:toolu_1")
    )
    identity = creation_id("wf-7:toolu_1")
    assert (created.id, created.creation_id, created.already_created) == (
        identity,
        identity,
        False,
    )
    assert radicale.resources(collection) == [f"{identity}.ics"]
    page = await listing(tools)
    [event] = page.items
    assert event["uid"] == identity
    assert (event["start"], event["end"]) == (
        "2026-01-07T11:00:00+00:00",
        "2026-01-07T12:00:00+00:00",
    )
    assert (event["summary"], event["description"], event["location"]) == (
        LUNCH["title"],
        LUNCH["description"],
        LUNCH["location"],
    )
    assert created.event["etag"]
    assert created.event["uid"] == identity


async def test_the_same_call_twice_creates_one_event(radicale: Radicale, collection: str) -> None:
    tools = caldav(collection)
    args = CreateCalendarEventArgs(**LUNCH)
    first = await run(tools.create_calendar_event, args, call("wf-8:toolu_2"))
    second = await run(tools.create_calendar_event, args, call("wf-8:toolu_2"))
    assert (first.already_created, second.already_created) == (False, True)
    assert second.id == first.id
    assert second.event["etag"] == first.event["etag"]
    assert radicale.resources(collection) == [f"{first.creation_id}.ics"]
    another = await run(tools.create_calendar_event, args, call("wf-9:toolu_2"))
    assert another.already_created is False
    assert len(radicale.resources(collection)) == 2  # another call is another event


async def test_an_identity_taken_by_another_event_creates_nothing(
    radicale: Radicale, collection: str
) -> None:
    identity = creation_id("wf-10:toolu_3")
    radicale.put(
        collection,
        f"{identity}.ics",
        single(identity, "Something else", ":20260107T110000Z", ":20260107T120000Z"),
    )
    tools = caldav(collection)
    error = await failure(
        run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH), call("wf-10:toolu_3"))
    )
    assert error.type == ErrorCode.PRECONDITION_FAILED.value
    assert identity in error.message
    assert error.details[0]["output"] == {"creation_id": identity}
    assert radicale.resources(collection) == [f"{identity}.ics"]


async def test_a_wrong_password_is_the_deployments_to_fix(collection: str) -> None:
    tools = caldav(collection, environ={PASSWORD_ENV: "not-the-password"})
    error = await failure(listing(tools))
    assert error.type == ErrorCode.CONFIGURATION_ERROR.value
    assert "401" in error.message
    assert "not-the-password" not in error.message
    create = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    assert create.type == ErrorCode.CONFIGURATION_ERROR.value


async def test_a_missing_password_sends_nothing(radicale: Radicale, collection: str) -> None:
    tools = caldav(collection, environ={})
    error = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    assert error.type == ErrorCode.CONFIGURATION_ERROR.value
    assert PASSWORD_ENV in error.message
    assert radicale.resources(collection) == []


async def test_a_collection_that_does_not_exist(radicale: Radicale) -> None:
    missing = f"{radicale.origin}/{USER}/no-such-calendar/"
    tools = caldav(missing)
    listed = await failure(listing(tools))
    assert listed.type == ErrorCode.CONFIGURATION_ERROR.value
    assert "calendar.url" in listed.message
    created = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    assert created.type == ErrorCode.CONFIGURATION_ERROR.value
    assert "calendar.url" in created.message


async def test_another_users_calendar_is_refused(radicale: Radicale) -> None:
    tools = caldav(f"{radicale.origin}/bob/calendar/")
    error = await failure(listing(tools))
    assert error.type == ErrorCode.CONFIGURATION_ERROR.value
    assert "403" in error.message


async def test_a_server_that_is_not_there_is_an_outage() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tools = caldav(f"http://127.0.0.1:{port}/alice/calendar/")
    error = await failure(listing(tools))
    assert (error.type, error.non_retryable) == (ErrorCode.NETWORK_UNAVAILABLE.value, False)
    created = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    # Never connected: nothing was sent, so not uncertain.
    assert created.type == ErrorCode.NETWORK_UNAVAILABLE.value


async def test_text_with_icalendar_syntax_stays_text(radicale: Radicale, collection: str) -> None:
    tools = caldav(collection)
    title = "A;B,C:D\\E END:VEVENT"
    await run(tools.create_calendar_event, CreateCalendarEventArgs(**{**LUNCH, "title": title}))
    [event] = (await listing(tools)).items
    assert event["summary"] == title


async def test_an_unreadable_event_on_the_server_is_an_error_not_a_crash(
    radicale: Radicale, collection: str
) -> None:
    radicale.put(collection, "odd.ics", ical("UID:odd\nDTSTART:20260107T100000Z\nSUMMARY:odd"))
    page = await listing(caldav(collection))
    # No DTEND and no DURATION: a timed event that ends as it starts (RFC 5545).
    assert [(e["uid"], e["start"], e["end"]) for e in page.items] == [
        ("odd", "2026-01-07T10:00:00+00:00", "2026-01-07T10:00:00+00:00")
    ]


async def test_https_with_a_private_ca_is_verified_against_the_ca_file(
    radicale_tls: TLSRadicale,
) -> None:
    server = radicale_tls.server
    collection = server.new_calendar()
    trusted = caldav(collection, ca_file=radicale_tls.ca_file)
    created = await run(trusted.create_calendar_event, CreateCalendarEventArgs(**LUNCH))
    assert server.resources(collection) == [f"{created.creation_id}.ics"]
    assert [item["uid"] for item in (await listing(trusted)).items] == [created.creation_id]
    # Without the deployment's CA the certificate does not verify: refused, never sent.
    untrusted = caldav(collection)
    listed = await failure(listing(untrusted))
    assert (listed.type, listed.non_retryable) == (ErrorCode.EXECUTION_FAILED.value, True)
    assert "certificate" in listed.message
    refused = await failure(
        run(untrusted.create_calendar_event, CreateCalendarEventArgs(**LUNCH), call("wf:other"))
    )
    assert refused.type == ErrorCode.EXECUTION_FAILED.value
    assert len(server.resources(collection)) == 1
