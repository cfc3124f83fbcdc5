"""Google Calendar (REST v3): ``events.list`` with single events expanded and ``events.insert``.

What it can touch: ``https://www.googleapis.com/calendar/v3/calendars/<calendar_id>/events``
with the deployment's OAuth access token, through the guarded service client (no redirects,
2 MiB answers, no retries). A creation sends the call's identity as the client-chosen event
``id``; Google answers 409 for an id it already holds, and then the existing event is read back
and returned if it is this call's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from toolcalls.activities.calendar.backend import (
    Created,
    NewEvent,
    Page,
    Target,
    Window,
    another_event,
    deleted_event,
    same_event,
)
from toolcalls.activities.calendar.settings import DEFAULT_GOOGLE_CALENDAR, CalendarSettings
from toolcalls.activities.network.guard import NetworkError
from toolcalls.activities.network.service import (
    ServiceAnswerError,
    ServiceClient,
    ServiceError,
    service_failure,
)

GOOGLE_API = "https://www.googleapis.com/calendar/v3"
SERVICE = "google calendar"
NOT_FOUND = "check calendar.calendar_id, and that the token's account can see that calendar"


class GoogleCalendar:
    """One Google calendar (``calendar_id``, default ``primary``)."""

    def __init__(self, settings: CalendarSettings, client: ServiceClient) -> None:
        calendar = settings.calendar_id or DEFAULT_GOOGLE_CALENDAR
        self._client = client
        self._events = f"{GOOGLE_API}/calendars/{quote(calendar, safe='')}/events"
        self.target = Target(
            kind="google",
            account=settings.account or "the access token's account",
            calendar=calendar,
            identity_field="Google event id",
        )

    async def list(self, tool: str, window: Window, cursor: str | None) -> Page:
        params = {
            "timeMin": window.start.isoformat(),
            "timeMax": window.end.isoformat(),
            "singleEvents": "true",
            "orderBy": "startTime",
            "maxResults": str(window.max_results),
        }
        if window.query:
            params["q"] = window.query
        if cursor:
            params["pageToken"] = cursor
        try:
            answer = (await self._client.request("GET", self._events, params=params)).json_object()
            items = answer.get("items", [])
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ServiceAnswerError("answered a page without a list of events")
        except (ServiceError, NetworkError) as exc:
            raise service_failure(tool, SERVICE, exc, write=False, not_found=NOT_FOUND) from None
        token = answer.get("nextPageToken")
        return Page(items=items, cursor=token if isinstance(token, str) and token else None)

    async def create(self, tool: str, event: NewEvent) -> Created:
        body: dict[str, Any] = {
            "id": event.creation_id,
            "summary": event.title,
            "start": {"dateTime": event.start.isoformat()},
            "end": {"dateTime": event.end.isoformat()},
        }
        if event.description:
            body["description"] = event.description
        if event.location:
            body["location"] = event.location
        identity = {"creation_id": event.creation_id}
        try:
            response = await self._client.request(
                "POST", self._events, json_body=body, accept=(409,)
            )
            if response.status_code != 409:
                created = response.json_object()
                if created.get("id") != event.creation_id:
                    raise ServiceAnswerError(
                        "answered an event with another id", response.status_code
                    )
                return Created(event=created, id=event.creation_id)
        except (ServiceError, NetworkError) as exc:
            raise service_failure(
                tool, SERVICE, exc, write=True, not_found=NOT_FOUND, output=identity
            ) from None
        return await self._existing(tool, event)

    async def find(self, tool: str, creation_id: str) -> dict[str, Any] | None:
        """The event whose Google id is ``creation_id`` (a deleted one says ``cancelled``)."""
        try:
            response = await self._client.request(
                "GET", f"{self._events}/{creation_id}", accept=(404, 410)
            )
            found = response.json_object() if response.status_code == 200 else None
        except (ServiceError, NetworkError) as exc:
            raise service_failure(tool, SERVICE, exc, write=False, not_found=NOT_FOUND) from None
        if found is None:
            return None
        return {key: found[key] for key in ("id", "status", "htmlLink") if key in found}

    async def _existing(self, tool: str, event: NewEvent) -> Created:
        """Google holds the id already: this call's event from an earlier attempt, or not."""
        try:
            response = await self._client.request(
                "GET", f"{self._events}/{event.creation_id}", accept=(404, 410)
            )
            found = response.json_object() if response.status_code == 200 else None
        except (ServiceError, NetworkError) as exc:
            raise service_failure(
                tool, SERVICE, exc, write=False, output={"creation_id": event.creation_id}
            ) from None
        if found is None:  # the id is taken by an event this calendar does not show
            raise another_event(tool, event, SERVICE)
        if found.get("status") == "cancelled":
            raise deleted_event(tool, event, SERVICE)
        start, end = _moment(found, "start"), _moment(found, "end")
        if not same_event(event, found.get("summary"), start, end):
            raise another_event(tool, event, SERVICE)
        return Created(event=found, id=event.creation_id, already_created=True)


def _moment(event: dict[str, Any], key: str) -> datetime | None:
    value = event.get(key)
    text = value.get("dateTime") if isinstance(value, dict) else None
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
