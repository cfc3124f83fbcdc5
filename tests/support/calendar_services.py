"""Google Calendar and Microsoft Graph calendars as loopback HTTP servers that keep their events.

Only the endpoints the calendar tools use, answering in each API's documented format:

- Google Calendar v3: ``events.insert`` takes a client-chosen ``id`` and answers 409
  (``reason: duplicate``) for an id the calendar already holds; ``events.get`` by id (404
  ``notFound`` otherwise).
- Graph v1.0 ``POST /me/calendar/events``: 201 with the event; a ``transactionId`` the calendar
  already holds gets the event made under it, and no new one.

Each service has a clock of its own (``now``) for the times it stamps and its ``Date`` header;
``advance`` moves it on, so that a test says "a minute later" without waiting a minute.

``hold_creations`` makes a service store the first event it is asked to create, say so
(``created``), and never answer that request: the worker that sent it does not learn that it
worked. The tools reach these servers through ``tests.support.calendar_host.forwarded_tools``.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

GOOGLE_EVENTS = "/calendar/v3/calendars/primary/events"
GRAPH_EVENTS = "/v1.0/me/calendar/events"
GOOGLE_DUPLICATE = "The requested identifier already exists."


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class CalendarService:
    """One calendar's events, and every request the service received."""

    kind: str
    """``google`` or ``graph``."""
    hold_creations: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)
    created: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    ahead: timedelta = timedelta(0)
    """How far the service's clock is ahead of this machine's."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _released: threading.Event = field(default_factory=threading.Event)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def now(self) -> datetime:
        return datetime.now(UTC) + self.ahead

    def advance(self, **delta: float) -> None:
        self.ahead += timedelta(**delta)

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any, bool]:
        """The status and JSON body for one request, and whether to hold the answer back."""
        with self._lock:
            if self.kind == "google":
                return self._google(method, path, body)
            return self._graph(method, path, body)

    def _google(self, method: str, path: str, body: Any) -> tuple[int, Any, bool]:
        if method == "POST" and path == GOOGLE_EVENTS:
            wanted = body.get("id")
            if any(event["id"] == wanted for event in self.events):
                return 409, _google_error(409, "duplicate", GOOGLE_DUPLICATE), False
            now = _stamp(self.now())
            event = {
                "kind": "calendar#event",
                "etag": f'"{secrets.randbelow(10**16)}"',
                "id": wanted or secrets.token_hex(13),
                "status": "confirmed",
                "htmlLink": f"https://www.google.com/calendar/event?eid={wanted}",
                "created": now,
                "updated": now,
                "summary": body.get("summary"),
                "creator": {"email": "alice@example.com", "self": True},
                "organizer": {"email": "alice@example.com", "self": True},
                "start": body.get("start"),
                "end": body.get("end"),
                "iCalUID": f"{wanted}@google.com",
                "sequence": 0,
                "reminders": {"useDefault": True},
                "eventType": "default",
                **{k: body[k] for k in ("description", "location") if k in body},
            }
            self.events.append(event)
            return 200, event, self._hold()
        prefix = GOOGLE_EVENTS + "/"
        if method == "GET" and path.startswith(prefix):
            wanted = unquote(path.removeprefix(prefix))
            for event in self.events:
                if event["id"] == wanted:
                    return 200, event, False
            return 404, _google_error(404, "notFound", "Not Found"), False
        return 404, _google_error(404, "notFound", "Not Found"), False

    def _graph(self, method: str, path: str, body: Any) -> tuple[int, Any, bool]:
        if method != "POST" or path != GRAPH_EVENTS:
            error = {"code": "ResourceNotFound", "message": "Resource could not be discovered."}
            return 404, {"error": error}, False
        context = "https://graph.microsoft.com/v1.0/$metadata#users('me')/calendar/events/$entity"
        transaction = body.get("transactionId")
        for event in self.events:
            if transaction is not None and event["transactionId"] == transaction:
                return 201, {"@odata.context": context, **event}, False
        now = _stamp(self.now(), graph=True)
        key = base64.urlsafe_b64encode(secrets.token_bytes(12)).decode()
        event_id = "AAMkAGI2TG93AAA" + base64.urlsafe_b64encode(secrets.token_bytes(30)).decode()
        event = {
            "@odata.etag": f'W/"{key}"',
            "id": event_id,
            "createdDateTime": now,
            "lastModifiedDateTime": now,
            "changeKey": key,
            "categories": [],
            "transactionId": transaction,
            "originalStartTimeZone": "UTC",
            "originalEndTimeZone": "UTC",
            "iCalUId": "040000008200E00074C5B7101A82E008" + secrets.token_hex(24).upper(),
            "reminderMinutesBeforeStart": 15,
            "isReminderOn": True,
            "subject": body.get("subject"),
            "bodyPreview": (body.get("body") or {}).get("content", "")[:255],
            "importance": "normal",
            "sensitivity": "normal",
            "isAllDay": False,
            "isCancelled": False,
            "isOrganizer": True,
            "showAs": "busy",
            "type": "singleInstance",
            "webLink": f"https://outlook.office365.com/owa/?itemid={event_id}&exvsurl=1",
            "body": body.get("body"),
            "start": _graph_moment(body.get("start")),
            "end": _graph_moment(body.get("end")),
            "location": body.get("location") or {"displayName": ""},
            "attendees": body.get("attendees", []),
            "organizer": {"emailAddress": {"name": "Alice", "address": "alice@example.com"}},
        }
        self.events.append(event)
        return 201, {"@odata.context": context, **event}, self._hold()

    def _hold(self) -> bool:
        held = self.hold_creations and not self.created.is_set()
        self.created.set()
        return held

    def wait_held(self) -> None:
        """Block until the service closes (a held answer is never sent)."""
        self._released.wait()

    def release(self) -> None:
        self._released.set()


def _stamp(now: datetime, *, graph: bool = False) -> str:
    if graph:  # Graph: seven fractional digits and Z
        return now.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _graph_moment(value: Any) -> Any:
    """Graph echoes a ``dateTimeTimeZone`` with seven fractional digits."""
    if not isinstance(value, dict) or "dateTime" not in value:
        return value
    moment = datetime.fromisoformat(value["dateTime"])
    return {**value, "dateTime": moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0"}


def _google_error(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "error": {
            "errors": [{"domain": "global", "reason": reason, "message": message}],
            "code": code,
            "message": message,
        }
    }


def _handler(service: CalendarService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            path = urlsplit(self.path).path
            headers = {k.lower(): v for k, v in self.headers.items()}
            service.requests.append(Received(self.command, path, headers, body))
            status, answer, hold = service.answer(self.command, path, body or {})
            if hold:
                service.wait_held()
                return
            data = json.dumps(answer).encode()
            with suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(status)  # with a Date header, as the services send
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        do_GET = do_POST = _serve

        def date_time_string(self, timestamp: float | None = None) -> str:
            return format_datetime(service.now(), usegmt=True)  # the service's clock

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the worker holding a connection was killed: nothing to report


@contextmanager
def calendar_service(kind: str, *, hold_creations: bool = False) -> Iterator[CalendarService]:
    """Serve a ``google`` or ``graph`` calendar on 127.0.0.1 for the duration of the block."""
    service = CalendarService(kind, hold_creations=hold_creations)
    httpd = _Server(("127.0.0.1", 0), _handler(service))
    service.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield service
    finally:
        service.release()
        httpd.shutdown()
        httpd.server_close()
