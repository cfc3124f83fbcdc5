"""CalDAV (RFC 4791): one calendar collection on Fastmail, iCloud, Nextcloud, Radicale, ...

What it can touch: the collection at ``[calendar] url`` and resources directly inside it, with
the deployment's username and a password read when each request is sent, through the guarded
service client (TLS verified, with an extra CA if configured; plain http only on loopback).

A listing is one ``calendar-query`` REPORT asking the server to expand recurrences within the
interval; the events (parsed from iCalendar with ``icalendar``; the XML with ``defusedxml``)
are filtered by ``query`` (a case-insensitive substring of summary, description or location),
ordered by start, and paged here with a cursor after the last event shown. A creation writes
``<creation_id>.ics`` with ``If-None-Match: *``: the server refuses to replace an existing
resource, so a second attempt of the same call finds the first one's event instead of adding
one; the UID is the creation id too.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

from defusedxml import DefusedXmlException  # type: ignore[import-untyped]
from defusedxml.ElementTree import ParseError, fromstring  # type: ignore[import-untyped]
from icalendar import Calendar, Event

from toolcalls.activities.calendar.backend import (
    Created,
    NewEvent,
    Page,
    Target,
    Window,
    another_event,
    same_event,
)
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.errors import tool_error
from toolcalls.activities.network.guard import NetworkError
from toolcalls.activities.network.service import (
    ServiceAnswerError,
    ServiceClient,
    ServiceError,
    ServiceStatusError,
    service_failure,
)
from toolcalls.workflows.models.call import ErrorCode

SERVICE = "caldav server"
NOT_FOUND = "check calendar.url: the collection does not exist"
MAX_EVENTS = 10_000
"""Events (recurring instances included) one listing reads; an interval with more is refused."""
PRODID = "-//toolcalls//calendar//EN"
DAV = "{DAV:}"
CALDAV = "{urn:ietf:params:xml:ns:caldav}"
REPORT = """<?xml version="1.0" encoding="utf-8"?>
<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:prop>
    <D:getetag/>
    <C:calendar-data><C:expand start="{start}" end="{end}"/></C:calendar-data>
  </D:prop>
  <C:filter>
    <C:comp-filter name="VCALENDAR">
      <C:comp-filter name="VEVENT"><C:time-range start="{start}" end="{end}"/></C:comp-filter>
    </C:comp-filter>
  </C:filter>
</C:calendar-query>
"""
XML_HEADERS = {"Depth": "1", "Content-Type": "application/xml; charset=utf-8", "Accept": "*/*"}


def _ical_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


class CalDAVCalendar:
    """One CalDAV calendar collection."""

    def __init__(self, settings: CalendarSettings, client: ServiceClient) -> None:
        assert settings.url is not None
        self._url = settings.url
        self._client = client
        host = self._url.split("/")[2]
        self.target = Target(
            kind="caldav",
            account=settings.account or f"{settings.username}@{host}",
            calendar=self._url,
            identity_field="CalDAV resource name and UID",
        )

    async def list(self, tool: str, window: Window, cursor: str | None) -> Page:
        after = _cursor(tool, cursor) if cursor is not None else None
        body = REPORT.format(start=_ical_utc(window.start), end=_ical_utc(window.end))
        try:
            response = await self._client.request(
                "REPORT", self._url, content=body.encode(), headers=XML_HEADERS
            )
            events = await asyncio.to_thread(parse_multistatus, response.body)
        except (ServiceError, NetworkError) as exc:
            raise self._failure(tool, exc, write=False) from None
        if len(events) > MAX_EVENTS:
            raise tool_error(
                ErrorCode.OUTPUT_TOO_LARGE,
                f"{tool}: the interval holds over {MAX_EVENTS} events; ask for a shorter one",
            )
        if window.query:
            needle = window.query.casefold()
            events = [e for e in events if needle in _searchable(e[1])]
        events.sort(key=lambda pair: pair[0])
        if after is not None:
            events = [pair for pair in events if pair[0] > after]
        page = events[: window.max_results]
        more = len(events) > window.max_results
        return Page(
            items=[item for _, item in page],
            cursor=json.dumps(page[-1][0]) if more else None,
        )

    async def create(self, tool: str, event: NewEvent) -> Created:
        href = f"{self._url}{event.creation_id}.ics"
        identity = {"creation_id": event.creation_id}
        resource = build_ical(event)
        try:
            response = await self._client.request(
                "PUT",
                href,
                content=resource,
                headers={
                    "If-None-Match": "*",
                    "Content-Type": "text/calendar; charset=utf-8",
                    "Accept": "*/*",
                },
                accept=(412,),
            )
        except (ServiceError, NetworkError) as exc:
            raise self._failure(tool, exc, write=True, output=identity) from None
        if response.status_code == 412:
            return await self._existing(tool, event, href)
        item = {
            "href": _path(href),
            "etag": response.headers.get("etag"),
            **_fields(_event_component(resource)),
        }
        return Created(event=item, id=event.creation_id)

    async def find(self, tool: str, creation_id: str) -> dict[str, Any] | None:
        """The resource ``<creation_id>.ics`` of the calendar collection, if it exists."""
        href = f"{self._url}{creation_id}.ics"
        try:
            response = await self._client.request(
                "GET", href, headers={"Accept": "text/calendar"}, accept=(404, 410)
            )
        except (ServiceError, NetworkError) as exc:
            raise self._failure(tool, exc, write=False) from None
        if response.status_code != 200:
            return None
        component = await asyncio.to_thread(_event_component, response.body)
        return {
            "href": _path(href),
            "etag": response.headers.get("etag"),
            "uid": str(component.get("UID", "")),
        }

    async def _existing(self, tool: str, event: NewEvent, href: str) -> Created:
        """The resource exists: this call's event from an earlier attempt, or another one."""
        try:
            response = await self._client.request("GET", href, headers={"Accept": "text/calendar"})
            component = await asyncio.to_thread(_event_component, response.body)
        except (ServiceError, NetworkError) as exc:
            raise self._failure(
                tool, exc, write=False, output={"creation_id": event.creation_id}
            ) from None
        start, end, _ = _span(component)
        if str(component.get("UID", "")) != event.creation_id or not same_event(
            event, str(component.get("SUMMARY", "")), start, end
        ):
            raise another_event(tool, event, SERVICE)
        item = {"href": _path(href), "etag": response.headers.get("etag"), **_fields(component)}
        return Created(event=item, id=event.creation_id, already_created=True)

    def _failure(
        self,
        tool: str,
        exc: ServiceError | NetworkError,
        *,
        write: bool,
        output: dict[str, Any] | None = None,
    ) -> Exception:
        if isinstance(exc, ServiceStatusError) and exc.status_code == 409 and write:
            # RFC 4918: a PUT whose parent collection does not exist.
            return tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"{tool}: {SERVICE} answered 409: {NOT_FOUND}",
                output={**(output or {}), "status_code": 409},
            )
        return service_failure(
            tool, SERVICE, exc, write=write, not_found=NOT_FOUND, fixed_host=False, output=output
        )


def _cursor(tool: str, cursor: str) -> list[str]:
    try:
        after = json.loads(cursor)
    except ValueError:
        after = None
    if not (isinstance(after, list) and len(after) == 3 and all(isinstance(x, str) for x in after)):
        raise tool_error(
            ErrorCode.INVALID_ARGUMENTS,
            f"{tool}: page_token: not a continuation of this calendar's listing",
            fixable_args=["page_token"],
        )
    return after


def build_ical(event: NewEvent) -> bytes:
    """The resource a creation writes: one personal timed VEVENT, in UTC, no attendees."""
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    vevent = Event()
    vevent.add("uid", event.creation_id)
    vevent.add("dtstamp", datetime.now(UTC).replace(microsecond=0))
    vevent.add("dtstart", event.start.astimezone(UTC))
    vevent.add("dtend", event.end.astimezone(UTC))
    vevent.add("summary", event.title)
    if event.description:
        vevent.add("description", event.description)
    if event.location:
        vevent.add("location", event.location)
    calendar.add_component(vevent)
    return bytes(calendar.to_ical())


def parse_multistatus(body: bytes) -> list[tuple[list[str], dict[str, Any]]]:
    """Every VEVENT of a ``calendar-query`` answer with its sort key (start, uid, instance)."""
    try:
        root = fromstring(body, forbid_dtd=True)
    except (ParseError, DefusedXmlException, ValueError):
        raise ServiceAnswerError("answered xml that cannot be read", 207) from None
    events: list[tuple[list[str], dict[str, Any]]] = []
    for response in root.iter(f"{DAV}response"):
        href = response.findtext(f"{DAV}href") or ""
        for propstat in response.iter(f"{DAV}propstat"):
            if " 200 " not in f" {propstat.findtext(f'{DAV}status') or ''} ":
                continue
            data = propstat.findtext(f"{DAV}prop/{CALDAV}calendar-data")
            if not data:
                continue
            etag = propstat.findtext(f"{DAV}prop/{DAV}getetag")
            for component in _components(data.encode("utf-8")):
                item = {"href": href, "etag": etag, **_fields(component)}
                events.append((_key(component), item))
                if len(events) > MAX_EVENTS:
                    return events
    return events


def _components(data: bytes) -> list[Any]:
    try:
        return list(Calendar.from_ical(data).walk("VEVENT"))
    except (ValueError, KeyError, IndexError, TypeError):
        raise ServiceAnswerError("answered calendar data that is not icalendar", 207) from None


def _event_component(data: bytes) -> Any:
    found = _components(data)
    if len(found) != 1:
        raise ServiceAnswerError("answered a resource without exactly one event")
    return found[0]


def _moment(value: Any) -> datetime | date | None:
    moment = getattr(value, "dt", None)
    return moment if isinstance(moment, date) else None


def _span(component: Any) -> tuple[datetime | None, datetime | None, bool]:
    """Start and end as instants (all-day and floating times read as UTC), and all-day."""
    start = _moment(component.get("DTSTART"))
    if start is None:
        raise ServiceAnswerError("answered an event without a valid dtstart")
    end = _moment(component.get("DTEND"))
    all_day = not isinstance(start, datetime)
    if end is None:
        duration = getattr(component.get("DURATION"), "dt", None)
        if isinstance(duration, timedelta):
            end = start + duration
        else:
            end = start + timedelta(days=1) if all_day else start
    return _instant(start), _instant(end), all_day


def _instant(moment: datetime | date) -> datetime:
    if not isinstance(moment, datetime):
        return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _key(component: Any) -> list[str]:
    start, _, _ = _span(component)
    assert start is not None
    recurrence = _moment(component.get("RECURRENCE-ID"))
    return [
        start.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%f"),
        str(component.get("UID", "")),
        recurrence.isoformat() if recurrence is not None else "",
    ]


def _text(component: Any, name: str) -> str | None:
    value = component.get(name)
    return str(value) if value is not None else None


def _iso(value: Any) -> str | None:
    moment = _moment(value)
    return moment.isoformat() if moment is not None else None


def _fields(component: Any) -> dict[str, Any]:
    """A VEVENT as JSON: its own properties, named as iCalendar names them, lower case."""
    _, _, all_day = _span(component)
    start = _moment(component.get("DTSTART"))
    end = _moment(component.get("DTEND"))
    if end is None and start is not None:
        _, end_instant, _ = _span(component)
        end = end_instant.date() if all_day and end_instant is not None else end_instant
    rrule = component.get("RRULE")
    return {
        "uid": _text(component, "UID"),
        "summary": _text(component, "SUMMARY"),
        "description": _text(component, "DESCRIPTION"),
        "location": _text(component, "LOCATION"),
        "start": start.isoformat() if start is not None else None,
        "end": end.isoformat() if end is not None else None,
        "all_day": all_day,
        "recurrence_id": _iso(component.get("RECURRENCE-ID")),
        "rrule": rrule.to_ical().decode() if rrule is not None else None,
        "status": _text(component, "STATUS"),
        "created": _iso(component.get("CREATED")),
        "last_modified": _iso(component.get("LAST-MODIFIED")),
    }


def _searchable(item: dict[str, Any]) -> str:
    parts = (item.get("summary"), item.get("description"), item.get("location"))
    return "\n".join(part for part in parts if isinstance(part, str)).casefold()


def _path(href: str) -> str:
    return "/" + href.split("/", 3)[3] if href.count("/") >= 3 else href
