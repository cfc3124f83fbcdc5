"""The contract between the calendar tools and a calendar service.

``CalendarBackend`` is the spec's small async protocol a deployment implements for another
service, named in ``[calendar] backend = "module:attribute"``. The tools talk to every backend
(the built-in Google, Outlook and CalDAV ones, and such an adapter) through ``Backend``: the
checked interval, the backend's own continuation, and a creation identity.

A backend reports what went wrong by raising the tool error itself
(``toolcalls.activities.errors``): the built-in ones through
``toolcalls.activities.network.service.service_failure``; an adapter may raise ``tool_error`` too,
and any other exception it raises is reported by its type only (its text may hold a remote answer).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from temporalio.exceptions import ApplicationError

from toolcalls.activities.errors import tool_error
from toolcalls.activities.storage.values import ValueProblem, check_value
from toolcalls.workflows.models.call import ErrorCode


@runtime_checkable
class CalendarBackend(Protocol):
    """Another calendar service (spec): both methods return JSON-compatible dictionaries.

    ``list_events`` returns ``{"items": [event, ...], "next_page_token": str | None}`` with at
    most ``max_results`` events overlapping ``[start, end)`` (ISO 8601 strings with offsets);
    ``create_event`` returns the created event with its ``"id"``. A ``create_event`` that also
    takes a ``creation_id`` keyword gets the call's identity: use it as the service's
    client-chosen id, so that the same call can never create two events. An optional
    ``query_help`` string tells the model what ``query`` matches; an optional ``calendar``
    string names the calendar in approval previews and page tokens.
    """

    async def list_events(
        self, *, start: str, end: str, query: str, max_results: int, page_token: str | None
    ) -> dict[str, Any]: ...

    async def create_event(
        self, *, title: str, start: str, end: str, description: str, location: str
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Window:
    """A checked listing: the interval as given and as instants, the query, the page size."""

    start: datetime
    end: datetime
    start_text: str
    end_text: str
    query: str
    max_results: int


@dataclass(frozen=True)
class NewEvent:
    """A checked creation, with the identity it is created under."""

    title: str
    start: datetime
    end: datetime
    start_text: str
    end_text: str
    description: str
    location: str
    creation_id: str


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    cursor: str | None
    """The backend's own continuation, or None on the last page."""


@dataclass(frozen=True)
class Created:
    event: dict[str, Any]
    id: str
    already_created: bool = False


@dataclass(frozen=True)
class Target:
    """What the tools say about where events are, for previews and page-token scopes."""

    kind: str
    """``google``, ``outlook``, ``caldav`` or ``custom``."""
    account: str
    calendar: str
    identity_field: str
    """What the creation identity becomes at the service (``Google event id``...)."""

    @property
    def scope(self) -> str:
        return f"{self.kind}\n{self.account}\n{self.calendar}"


class Backend(Protocol):
    """How the tools reach one calendar. A backend may also have ``async find(tool,
    creation_id) -> dict | None``, the event created under that identity (``toolcalls
    reconcile``)."""

    target: Target

    async def list(self, tool: str, window: Window, cursor: str | None) -> Page: ...

    async def create(self, tool: str, event: NewEvent) -> Created: ...


class BackendLoadError(ValueError):
    """The deployment's backend cannot be imported or is not a ``CalendarBackend``."""


def load_backend(path: str, options: Mapping[str, Any]) -> CalendarBackend:
    """Import ``module:attribute``; a class or factory there is called with ``options``."""
    module_name, _, attribute = path.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendLoadError(f"cannot import {module_name}: {exc}") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise BackendLoadError(f"{module_name} has no attribute {attribute}")
        found = getattr(found, part)
    if inspect.isclass(found) or (callable(found) and not isinstance(found, CalendarBackend)):
        try:
            found = found(**options)
        except Exception as exc:
            raise BackendLoadError(
                f"{path}({', '.join(options)}) raised {type(exc).__name__}"
            ) from None
    elif options:
        raise BackendLoadError(f"{path} is not a class or factory, so it takes no options")
    if not isinstance(found, CalendarBackend):
        raise BackendLoadError(f"{path} has no list_events and create_event methods")
    for method in ("list_events", "create_event"):
        if not inspect.iscoroutinefunction(getattr(found, method)):
            raise BackendLoadError(f"{path}.{method} is not an async method")
    return found


def accepts_creation_id(backend: CalendarBackend) -> bool:
    """Whether the backend's ``create_event`` takes the ``creation_id`` keyword."""
    parameters = inspect.signature(backend.create_event).parameters
    return "creation_id" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


class AnswerProblem(ValueError):
    """A backend's answer is not the documented shape; the message says what."""


def check_page(answer: Any, max_results: int) -> Page:
    """An adapter's ``list_events`` answer as a ``Page``; raises ``AnswerProblem``."""
    if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
        raise AnswerProblem("list_events returned no items list")
    items = answer["items"]
    if len(items) > max_results:
        raise AnswerProblem(f"list_events returned {len(items)} items, over max_results")
    if not all(isinstance(item, dict) for item in items):
        raise AnswerProblem("list_events returned an item that is not an object")
    token = answer.get("next_page_token")
    if token is not None and (not isinstance(token, str) or not token):
        raise AnswerProblem("list_events returned a next_page_token that is not a string")
    _json(items, "list_events")
    return Page(items=items, cursor=token)


def check_created(answer: Any) -> Created:
    """An adapter's ``create_event`` answer as ``Created``; raises ``AnswerProblem``."""
    if not isinstance(answer, dict):
        raise AnswerProblem("create_event returned something that is not an object")
    event_id = answer.get("id")
    if not isinstance(event_id, str) or not event_id:
        raise AnswerProblem("create_event returned no id")
    _json(answer, "create_event")
    return Created(event=answer, id=event_id)


def _json(value: Any, method: str) -> None:
    try:
        check_value(value)
    except ValueProblem as exc:
        raise AnswerProblem(f"{method} returned something that is not json data: {exc}") from None


def same_event(new: NewEvent, title: Any, start: datetime | None, end: datetime | None) -> bool:
    """Whether an existing event under ``new``'s identity is the one this call creates."""
    return title == new.title and start == new.start and end == new.end


def another_event(tool: str, new: NewEvent, service: str) -> ApplicationError:
    """The identity is taken by an event this call did not ask for: nothing was created."""
    return tool_error(
        ErrorCode.PRECONDITION_FAILED,
        f"{tool}: {service} already holds an event under creation id {new.creation_id} with "
        "other details (the call's id was reused for another event?); nothing was created",
        output={"creation_id": new.creation_id},
    )


def deleted_event(tool: str, new: NewEvent, service: str) -> ApplicationError:
    """An earlier attempt of this call created the event and someone has since deleted it."""
    return tool_error(
        ErrorCode.PRECONDITION_FAILED,
        f"{tool}: this call's event (creation id {new.creation_id}) was created on {service} "
        "earlier and has since been deleted; nothing was created",
        output={"creation_id": new.creation_id},
    )
