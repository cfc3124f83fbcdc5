"""``CalendarTools``: ``list_calendar_events`` and ``create_calendar_event`` on one calendar.

What it can touch: the one calendar the deployment configured (``[calendar]``), through its
backend; nothing the model says chooses the account, the calendar or the host. Every operation
is bounded by ``timeout_seconds`` as a whole and heartbeats, so cancellation reaches it.

A creation is made under an identity derived from the call's idempotency key
(``toolcalls.activities.calendar.tokens.creation_id``); the approval preview shows it, the first
heartbeat reports it before anything is sent (a lost worker's ``uncertain`` result carries it), and
the result holds it, so whoever must check whether the event exists knows what to look for.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import certifi

from toolcalls.activities.base import CallContext
from toolcalls.activities.calendar.backend import Backend, NewEvent, Window, load_backend
from toolcalls.activities.calendar.custom import CustomCalendar
from toolcalls.activities.calendar.google import GoogleCalendar
from toolcalls.activities.calendar.models import (
    CreateCalendarEventArgs,
    CreateCalendarEventResult,
    ListCalendarEventsArgs,
    ListCalendarEventsResult,
    parse_timestamp,
    utc_text,
)
from toolcalls.activities.calendar.outlook import OutlookCalendar
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.calendar.tokens import PageToken, creation_id, scope_digest, window_digest
from toolcalls.activities.connections import Connections
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.network.guard import NetworkGuard
from toolcalls.activities.network.service import (
    CredentialError,
    Credentials,
    Secret,
    ServiceClient,
    basic_auth,
    bearer_token,
    service_guard,
)
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode
from toolcalls.workflows.models.reconcile import Lookup, LookupInput

LIST = "list_calendar_events"
CREATE = "create_calendar_event"
T = TypeVar("T")


class CalendarTools:
    """The calendar tools over the deployment's backend (built once; it connects to nothing)."""

    def __init__(
        self,
        settings: CalendarSettings,
        *,
        environ: Mapping[str, str] | None = None,
        guard: NetworkGuard | None = None,
        backend: Backend | None = None,
        connections: Connections | None = None,
    ) -> None:
        """``guard`` replaces the network guard (tests: a mock transport); ``backend`` the whole
        backend; ``connections``: the deployment's, for ``connection``."""
        self._settings = settings
        self._environ = os.environ if environ is None else environ
        self._secret = _secret(settings)
        self._credentials = _connected(settings, connections)
        self._backend = backend or make_backend(settings, self._environ, guard, connections)

    @property
    def backend(self) -> Backend:
        return self._backend

    async def list_calendar_events(
        self, args: ListCalendarEventsArgs, call: CallContext
    ) -> ListCalendarEventsResult:
        """One page of the events overlapping ``[start, end)``, ordered by start."""
        target = self._backend.target
        start, end = parse_timestamp(args.start), parse_timestamp(args.end)
        window = Window(start, end, args.start, args.end, args.query, args.max_results)
        scope = scope_digest(target.scope)
        listing = window_digest(start, end, args.query, args.max_results)
        cursor = None
        if args.page_token is not None:
            token = PageToken.decode(args.page_token)  # checked at plan
            if token.scope != scope or token.window != listing:
                raise tool_error(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"{LIST}: page_token belongs to another calendar, backend or listing; leave "
                    "it out to start again",
                    fixable_args=["page_token"],
                )
            cursor = token.cursor
        async with Heartbeat(tool=LIST, backend=target.kind, calendar=target.calendar):
            page = await self._bounded(LIST, lambda: self._backend.list(LIST, window, cursor))
        following = PageToken(scope, listing, page.cursor).encode() if page.cursor else None
        return ListCalendarEventsResult(items=page.items, next_page_token=following)

    async def prepare_create_calendar_event(
        self, args: CreateCalendarEventArgs, call: CallContext
    ) -> Prepared:
        """The exact event an approver sees: where, what, when (as given and in UTC), and the
        identity it will be created under."""
        await self._check_credential()  # a worker that cannot send it fails before anyone is asked
        event = _new_event(args, call)
        target = self._backend.target
        data = {
            "backend": target.kind,
            "account": target.account,
            "calendar": target.calendar,
            "title": event.title,
            "start": event.start_text,
            "end": event.end_text,
            "start_utc": utc_text(event.start),
            "end_utc": utc_text(event.end),
            "description": event.description,
            "location": event.location,
            "creation_id": event.creation_id,
            "creation_id_is": target.identity_field,
        }
        lines = [
            f"calendar: {target.calendar} ({target.kind}, {target.account})",
            f"title: {event.title}",
            f"start: {event.start_text} ({data['start_utc']})",
            f"end: {event.end_text} ({data['end_utc']})",
            f"location: {event.location}",
            f"description: {event.description}",
            f"creation id ({target.identity_field}): {event.creation_id}",
        ]
        return Prepared(
            preview=[
                PreviewArtifact(
                    kind="calendar_event",
                    title=f"create event {event.title!r} on {target.calendar}",
                    text="\n".join(lines),
                    data=data,
                )
            ],
            precondition=self._precondition(event),
        )

    async def create_calendar_event(
        self, args: CreateCalendarEventArgs, call: CallContext
    ) -> CreateCalendarEventResult:
        """Create the event once: a second attempt of the same call finds the first's event."""
        event = _new_event(args, call)
        held = call.precondition
        if held is not None and held != self._precondition(event):
            raise tool_error(
                ErrorCode.PRECONDITION_FAILED,
                f"{CREATE}: the deployment's calendar changed since the approval: approved "
                f"{held.get('calendar')} ({held.get('backend')}), now "
                f"{self._backend.target.calendar}; nothing was created",
            )
        await self._check_credential()
        target = self._backend.target
        async with Heartbeat(
            tool=CREATE,
            creation_id=event.creation_id,
            backend=target.kind,
            calendar=target.calendar,
        ) as beat:
            beat.beat()  # the identity reaches the server before any request can leave
            created = await self._bounded(
                CREATE, lambda: self._backend.create(CREATE, event), creation=event.creation_id
            )
        return CreateCalendarEventResult(
            id=created.id,
            creation_id=event.creation_id,
            already_created=created.already_created,
            event=created.event,
        )

    async def reconcile_create_calendar_event(self, call: LookupInput) -> Lookup:
        """Whether an uncertain call's event exists, looked up by its creation id (read-only)."""
        identity = creation_id(call.idempotency_key)
        recorded = (call.output or {}).get("creation_id")
        if recorded is not None and recorded != identity:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"{CREATE}: the call recorded a creation id that is not its own",
            )
        target = self._backend.target
        find = getattr(self._backend, "find", None)
        if find is None:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"{CREATE}: the {target.kind} backend cannot look an event up by its creation id",
            )
        checked = (
            f"looked up creation id {identity} ({target.identity_field}) on {target.calendar} "
            f"({target.kind})"
        )
        async with Heartbeat(tool=CREATE, creation_id=identity, backend=target.kind):
            found = await self._bounded(CREATE, lambda: find(CREATE, identity))
        if found is None:
            return Lookup(found=False, checked=f"{checked}: not there")
        return Lookup(found=True, checked=checked, evidence={"creation_id": identity, **found})

    def _precondition(self, event: NewEvent) -> dict[str, Any]:
        target = self._backend.target
        return {
            "backend": target.kind,
            "calendar": target.calendar,
            "account": target.account,
            "creation_id": event.creation_id,
        }

    async def _check_credential(self) -> None:
        """The credential can be read now (it is read again when each request is sent)."""
        if self._credentials is not None:
            await self._credentials()  # the principal's token, refreshed if it must be
            return
        if self._secret is None:
            return
        try:
            await self._secret.read(self._environ)
        except CredentialError as exc:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR, f"{CREATE}: credential: {exc.reason}"
            ) from None

    async def _bounded(
        self, tool: str, operation: Callable[[], Awaitable[T]], *, creation: str | None = None
    ) -> T:
        """``operation`` within ``timeout_seconds``; a creation cut off may have happened."""
        limit = self._settings.timeout_seconds
        try:
            async with asyncio.timeout(limit):
                return await operation()
        except TimeoutError:
            if creation is not None:
                raise tool_error(
                    ErrorCode.UNCERTAIN,
                    f"{tool}: no answer within {limit:g} s; the event may have been created "
                    f"(creation id {creation}): check before calling again",
                    output={"creation_id": creation},
                ) from None
            raise tool_error(
                ErrorCode.TIMED_OUT, f"{tool}: no answer within {limit:g} s", retryable=True
            ) from None


def _new_event(args: CreateCalendarEventArgs, call: CallContext) -> NewEvent:
    return NewEvent(
        title=args.title,
        start=parse_timestamp(args.start),
        end=parse_timestamp(args.end),
        start_text=args.start,
        end_text=args.end,
        description=args.description,
        location=args.location,
        creation_id=creation_id(call.idempotency_key),
    )


def _connected(settings: CalendarSettings, connections: Connections | None) -> Credentials | None:
    """The call's principal's token, when the deployment backs the calendar by connections."""
    if settings.connection is None:
        return None
    if connections is None:
        raise ValueError("calendar.connection needs [connections] with its provider")
    return connections.bearer(settings.connection, "calendar")


def _secret(settings: CalendarSettings) -> Secret | None:
    if settings.connection is not None:
        return None
    if settings.backend in ("google", "outlook"):
        return Secret(env=settings.token_env, file=settings.token_file)
    if settings.backend == "caldav":
        return Secret(env=settings.password_env, file=settings.password_file)
    return None


def tls_verification(settings: CalendarSettings) -> ssl.SSLContext | bool:
    """The system's roots, plus the deployment's ``ca_file``: never off."""
    if settings.ca_file is None:
        return True
    context = ssl.create_default_context(cafile=certifi.where())
    context.load_verify_locations(cafile=str(settings.ca_file))
    return context


def make_backend(
    settings: CalendarSettings,
    environ: Mapping[str, str],
    guard: NetworkGuard | None = None,
    connections: Connections | None = None,
) -> Backend:
    """The configured backend; raises ``ValueError`` (or ``BackendLoadError``) naming what is
    wrong. Nothing connects here."""
    kind = settings.backend
    if kind is None:
        raise ValueError("no backend configured")
    secret = _secret(settings)
    timeout = settings.timeout_seconds
    if kind in ("google", "outlook"):
        connected = _connected(settings, connections)
        assert secret is not None or connected is not None
        name = "google calendar" if kind == "google" else "microsoft graph"
        client = ServiceClient(
            name,
            credentials=connected or bearer_token(secret, environ),  # type: ignore[arg-type]
            timeout_seconds=timeout,
            guard=guard or service_guard(),
        )
        return (
            GoogleCalendar(settings, client)
            if kind == "google"
            else OutlookCalendar(settings, client)
        )
    if kind == "caldav":
        from toolcalls.activities.calendar.caldav import CalDAVCalendar  # the integrations extra

        assert secret is not None
        if settings.url is None or settings.username is None:
            raise ValueError("the caldav backend needs url and username")
        plain = settings.url.startswith("http:")
        client = ServiceClient(
            "caldav server",
            credentials=basic_auth(settings.username, secret, environ),
            timeout_seconds=timeout,
            guard=guard or service_guard(verify=tls_verification(settings)),
            schemes=("http", "https") if plain else ("https",),
        )
        return CalDAVCalendar(settings, client)
    return CustomCalendar(kind, load_backend(kind, settings.options), settings.account)
