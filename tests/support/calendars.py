"""Calendars for the calendar tests: helpers around the Radicale server, iCalendar to store in
it, and Google and Graph replayed through ``httpx.MockTransport`` behind the production guard.

``ServiceReplay`` answers each request with the next response a test composed to the API's
documented format (or from a handler) and keeps every request, so tests assert what left the
worker: the URL, query, headers and body.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from temporalio.testing import ActivityEnvironment

from tests.support.http_servers import MapResolver
from toolcalls.activities.base import CallContext
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.calendar.tools import CalendarTools
from toolcalls.activities.network.service import service_guard

USER = "alice"
PASSWORD = "c4ld4v-pa55w0rd"
PASSWORD_ENV = "TOOLCALLS_TEST_CALDAV_PASSWORD"
TOKEN = "ya29.a0-s3cr3t-access-token"
TOKEN_ENV = "TOOLCALLS_TEST_CALENDAR_TOKEN"
GOOGLE_HOST = "www.googleapis.com"
GRAPH_HOST = "graph.microsoft.com"
PUBLIC_ADDRESS = "142.250.74.10"


def call(key: str = "wf-1:call-1", precondition: dict[str, Any] | None = None) -> CallContext:
    workflow_id, _, call_id = key.partition(":")
    return CallContext(
        workflow_id=workflow_id,
        call_id=call_id,
        idempotency_key=key,
        approval=None,
        precondition=precondition,
    )


def calendar_env(tool: str) -> ActivityEnvironment:
    """An activity context as the worker gives the calendar tools (heartbeats recorded)."""
    env = ActivityEnvironment()
    now = datetime.now(UTC)
    env.info = dataclasses.replace(
        env.info,
        activity_type=tool,
        workflow_type="ToolCallWorkflow",
        started_time=now,
        heartbeat_timeout=timedelta(seconds=10),
        start_to_close_timeout=timedelta(seconds=40),
    )
    return env


async def run(
    method: Callable[..., Any],
    args: Any,
    context: CallContext | None = None,
    beats: list[Any] | None = None,
) -> Any:
    """Run one tool method in an activity context; its heartbeats go to ``beats``."""
    env = calendar_env(method.__name__.removeprefix("prepare_"))
    if beats is not None:
        env.on_heartbeat = lambda *details: beats.extend(details)
    return await env.run(method, args, context or call())


Answer = (
    httpx.Response
    | Callable[[httpx.Request], httpx.Response]
    | Callable[[httpx.Request], Awaitable[httpx.Response]]
)
"""A composed response, or a handler making one (an async handler may take its time)."""


@dataclass
class ServiceReplay:
    """A MockTransport handler: composed answers in order, every request kept."""

    answers: list[Answer] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> Any:
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    def then(self, *answers: Answer) -> ServiceReplay:
        self.answers.extend(answers)
        return self

    def tools(self, environ: dict[str, str] | None = None, **settings: Any) -> CalendarTools:
        guard = service_guard(
            resolver=MapResolver({GOOGLE_HOST: [PUBLIC_ADDRESS], GRAPH_HOST: [PUBLIC_ADDRESS]}),
            transport=httpx.MockTransport(self),
        )
        return CalendarTools(
            CalendarSettings(token_env=TOKEN_ENV, **settings),
            environ={TOKEN_ENV: TOKEN} if environ is None else environ,
            guard=guard,
        )

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]

    def sent_json(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


def json_answer(status: int, body: Any, **headers: str) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers)


def google_event(
    event_id: str, summary: str, start: str, end: str, *, all_day: bool = False, **more: Any
) -> dict[str, Any]:
    """An event as Google's events resource shows it (timed: dateTime; all-day: date)."""
    kind = "date" if all_day else "dateTime"
    return {
        "kind": "calendar#event",
        "etag": f'"{abs(hash(event_id))}"',
        "id": event_id,
        "status": "confirmed",
        "htmlLink": f"https://www.google.com/calendar/event?eid={event_id}",
        "summary": summary,
        "start": {kind: start},
        "end": {kind: end},
        "iCalUID": f"{event_id}@google.com",
        **more,
    }


def google_page(items: Iterable[dict[str, Any]], next_token: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {
        "kind": "calendar#events",
        "summary": "primary",
        "timeZone": "Europe/Berlin",
        "items": list(items),
    }
    if next_token:
        body["nextPageToken"] = next_token
    return json_answer(200, body)


def graph_event(event_id: str, subject: str, start: str, end: str, **more: Any) -> dict[str, Any]:
    """An event as Graph's calendarView shows it under ``Prefer: outlook.timezone="UTC"``."""
    return {
        "@odata.etag": f'W/"{event_id}"',
        "id": event_id,
        "subject": subject,
        "bodyPreview": more.pop("bodyPreview", ""),
        "start": {"dateTime": start, "timeZone": "UTC"},
        "end": {"dateTime": end, "timeZone": "UTC"},
        "isAllDay": more.pop("isAllDay", False),
        "location": {"displayName": more.pop("location", "")},
        "type": more.pop("type", "singleInstance"),
        **more,
    }


def graph_page(items: Iterable[dict[str, Any]], next_link: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {
        "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('me')/calendarView",
        "value": list(items),
    }
    if next_link:
        body["@odata.nextLink"] = next_link
    return json_answer(200, body)


def ical(*events: str) -> str:
    """A VCALENDAR of ``events`` (each the lines of one VEVENT), with CRLF line ends."""
    body = "".join(f"BEGIN:VEVENT\n{event.strip()}\nEND:VEVENT\n" for event in events)
    text = f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//tests//EN\n{body}END:VCALENDAR\n"
    return text.replace("\n", "\r\n")


def recurring(uid: str, summary: str, first: str, count: int) -> str:
    """A daily 15-minute event from ``first`` (``20260105T090000Z``), ``count`` times."""
    return ical(
        f"UID:{uid}\nDTSTAMP:20260101T000000Z\nDTSTART:{first}\nDURATION:PT15M\n"
        f"RRULE:FREQ=DAILY;COUNT={count}\nSUMMARY:{summary}"
    )


def single(uid: str, summary: str, start: str, end: str, *more: str) -> str:
    """One event; ``start``/``end`` carry their parameters (``:2026...Z``, ``;VALUE=DATE:...``)."""
    lines = [f"UID:{uid}", "DTSTAMP:20260101T000000Z", f"DTSTART{start}", f"DTEND{end}"]
    return ical("\n".join([*lines, f"SUMMARY:{summary}", *more]))
