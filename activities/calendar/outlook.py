"""Microsoft 365 / Outlook calendars (Graph v1.0): ``calendarView`` and event creation.

What it can touch: ``https://graph.microsoft.com/v1.0/{me | users/<user_id>}/{calendar |
calendars/<calendar_id>}`` with the deployment's OAuth access token, through the guarded
service client. A next page is the ``@odata.nextLink`` Graph gives, followed only after it is
checked against the first request's host, collection and interval. ``query`` filters each page
(subject, body preview, location; case-insensitive), so a page may be empty and still have a
next one. A creation converts the offsets to UTC instants and sends the call's identity as the
event's ``transactionId``. Graph answers a repeated ``transactionId`` with the event it already
holds under it, as if it had just made it: that answer is returned only if it is the event this
call asks for (subject, start, end), and it is ``already_created`` when Graph's own clock says so
(the event's ``createdDateTime`` is older than the request, by the answer's ``Date``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx

from toolcalls.activities.calendar.backend import (
    Created,
    NewEvent,
    Page,
    Target,
    Window,
    another_event,
    same_event,
)
from toolcalls.activities.calendar.settings import DEFAULT_OUTLOOK_USER, CalendarSettings
from toolcalls.activities.errors import tool_error
from toolcalls.activities.network.guard import NetworkError
from toolcalls.activities.network.service import (
    LinkRefused,
    ServiceAnswerError,
    ServiceClient,
    ServiceError,
    continuation,
    service_failure,
)
from toolcalls.workflows.models.call import ErrorCode

GRAPH_API = "https://graph.microsoft.com/v1.0"
SERVICE = "microsoft graph"
NOT_FOUND = "check calendar.user_id and calendar.calendar_id"
SELECT = (
    "id,subject,bodyPreview,start,end,isAllDay,location,locations,organizer,attendees,showAs,"
    "type,seriesMasterId,isCancelled,webLink,categories,importance,sensitivity,"
    "createdDateTime,lastModifiedDateTime,transactionId"
)
"""The fields a listing asks for: everything but the full body, which can be large."""
PREFER_UTC = {"Prefer": 'outlook.timezone="UTC"'}
INTERVAL_PARAMS = ("startDateTime", "endDateTime")
UTC_ZONES = frozenset({"utc", "etc/utc", "coordinated universal time"})
CLOCK_SLACK = timedelta(seconds=2)
"""Beyond the request's own duration: the ``Date`` header's whole seconds, and Graph's servers'
clocks. An event created longer than that before Graph answered was made by an earlier request."""


def _graph_time(moment: datetime) -> str:
    """A UTC instant as Graph's ``dateTimeTimeZone.dateTime`` (no offset; zone ``UTC``)."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat()


class OutlookCalendar:
    """One user's calendar on Microsoft Graph (``user_id`` default ``me``)."""

    def __init__(self, settings: CalendarSettings, client: ServiceClient) -> None:
        user = settings.user_id
        owner = "me" if user == DEFAULT_OUTLOOK_USER else f"users/{quote(user, safe='')}"
        calendar = settings.calendar_id
        where = "calendar" if calendar is None else f"calendars/{quote(calendar, safe='')}"
        self._client = client
        self._base = f"{GRAPH_API}/{owner}/{where}"
        self.target = Target(
            kind="outlook",
            account=settings.account or user,
            calendar=calendar or "default calendar",
            identity_field="Graph transactionId",
        )

    @property
    def view_url(self) -> str:
        return f"{self._base}/calendarView"

    async def list(self, tool: str, window: Window, cursor: str | None) -> Page:
        first = self._first_page(window)
        if cursor is None:
            url = first
        else:
            try:
                url = str(continuation(cursor, first, fixed_params=INTERVAL_PARAMS))
            except LinkRefused as exc:
                raise tool_error(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"{tool}: page_token: {exc.reason}; leave page_token out to start again",
                    fixable_args=["page_token"],
                ) from None
        try:
            answer = (await self._client.request("GET", url, headers=PREFER_UTC)).json_object()
            items = answer.get("value", [])
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ServiceAnswerError("answered a page without a list of events")
            link = answer.get("@odata.nextLink")
            if link is not None:
                # Checked now too: a link that would be refused next time is no continuation.
                link = str(continuation(str(link), first, fixed_params=INTERVAL_PARAMS))
        except (ServiceError, NetworkError) as exc:
            raise service_failure(tool, SERVICE, exc, write=False, not_found=NOT_FOUND) from None
        if window.query:
            needle = window.query.casefold()
            items = [item for item in items if needle in _searchable(item)]
        return Page(items=items, cursor=link)

    def _first_page(self, window: Window) -> str:
        params = {
            "startDateTime": _graph_time(window.start) + "Z",
            "endDateTime": _graph_time(window.end) + "Z",
            "$top": str(window.max_results),
            "$orderby": "start/dateTime",
            "$select": SELECT,
        }
        return str(httpx.URL(self.view_url, params=params))

    async def create(self, tool: str, event: NewEvent) -> Created:
        body: dict[str, Any] = {
            "subject": event.title,
            "body": {"contentType": "text", "content": event.description},
            "start": {"dateTime": _graph_time(event.start), "timeZone": "UTC"},
            "end": {"dateTime": _graph_time(event.end), "timeZone": "UTC"},
            "attendees": [],
            "transactionId": event.creation_id,
        }
        if event.location:
            body["location"] = {"displayName": event.location}
        try:
            sent = time.monotonic()
            response = await self._client.request(
                "POST", f"{self._base}/events", json_body=body, headers=PREFER_UTC
            )
            took = timedelta(seconds=time.monotonic() - sent)
            created = response.json_object()
            event_id = created.get("id")
            if not isinstance(event_id, str) or not event_id:
                raise ServiceAnswerError("answered an event without an id", response.status_code)
            held = created.get("transactionId")
            if held is not None and held != event.creation_id:
                raise ServiceAnswerError(
                    "answered an event with another transactionId", response.status_code
                )
        except (ServiceError, NetworkError) as exc:
            raise service_failure(
                tool,
                SERVICE,
                exc,
                write=True,
                not_found=NOT_FOUND,
                output={"creation_id": event.creation_id},
            ) from None
        if not _is_this_event(event, created):  # the transactionId holds another event
            raise another_event(tool, event, SERVICE)
        earlier = _made_before(created, response.headers.get("date"), took)
        return Created(event=created, id=event_id, already_created=earlier)


def _is_this_event(new: NewEvent, answer: dict[str, Any]) -> bool:
    """Whether Graph's answer is the event this call asks for. A time in a zone other than UTC
    (Graph answers in the zone the request used, UTC) is not compared."""
    start, end = _utc_moment(answer.get("start")), _utc_moment(answer.get("end"))
    return same_event(
        new,
        answer.get("subject"),
        new.start if start is None else start,
        new.end if end is None else end,
    )


def _utc_moment(value: Any) -> datetime | None:
    """A ``dateTimeTimeZone`` in UTC as an instant (seven fractional digits are fine)."""
    if not isinstance(value, dict):
        return None
    text, zone = value.get("dateTime"), value.get("timeZone")
    if not isinstance(text, str) or not isinstance(zone, str) or zone.lower() not in UTC_ZONES:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _made_before(answer: dict[str, Any], date: str | None, took: timedelta) -> bool:
    """Whether Graph made the event before this request: its ``createdDateTime`` is older than
    the answer's ``Date`` by more than the request took (both from Graph's clock)."""
    made = answer.get("createdDateTime")
    if not isinstance(made, str) or not date:
        return False
    try:
        created = datetime.fromisoformat(made)
        answered = parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return False
    if created.tzinfo is None or answered.tzinfo is None:
        return False
    return created < answered - took - CLOCK_SLACK


def _searchable(item: dict[str, Any]) -> str:
    location = item.get("location")
    parts = [
        item.get("subject"),
        item.get("bodyPreview"),
        location.get("displayName") if isinstance(location, dict) else None,
    ]
    return "\n".join(part for part in parts if isinstance(part, str)).casefold()
