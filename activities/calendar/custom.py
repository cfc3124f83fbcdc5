"""A deployment's own ``CalendarBackend``, named by import path, behind the tools' contract.

What it can touch: whatever the deployment's code touches; the tools give it checked arguments
only, bound its time (``timeout_seconds``), check that its answers are JSON data of the
documented shape, and report an exception it raises by its type alone (its text may quote a
remote answer), unless it is a tool error it raised on purpose.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio.exceptions import ApplicationError

from toolcalls.activities.calendar.backend import (
    AnswerProblem,
    CalendarBackend,
    Created,
    NewEvent,
    Page,
    Target,
    Window,
    accepts_creation_id,
    check_created,
    check_page,
)
from toolcalls.activities.errors import tool_error
from toolcalls.workflows.models.call import ErrorCode

T = TypeVar("T")
_KNOWN_CODES = frozenset(code.value for code in ErrorCode)


class CustomCalendar:
    """``[calendar] backend = "module:attribute"``."""

    def __init__(self, path: str, backend: CalendarBackend, account: str | None) -> None:
        self._backend = backend
        self._path = path
        self._creation_id = accepts_creation_id(backend)
        self.target = Target(
            kind="custom",
            account=account or path,
            calendar=str(getattr(backend, "calendar", "") or path),
            identity_field="creation_id" if self._creation_id else "none (the backend takes none)",
        )

    async def list(self, tool: str, window: Window, cursor: str | None) -> Page:
        answer = await self._call(
            tool,
            lambda: self._backend.list_events(
                start=window.start_text,
                end=window.end_text,
                query=window.query,
                max_results=window.max_results,
                page_token=cursor,
            ),
            write=False,
        )
        try:
            return check_page(answer, window.max_results)
        except AnswerProblem as exc:
            raise tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {self._path}: {exc}") from None

    async def create(self, tool: str, event: NewEvent) -> Created:
        extra: dict[str, Any] = {"creation_id": event.creation_id} if self._creation_id else {}
        answer = await self._call(
            tool,
            lambda: self._backend.create_event(
                title=event.title,
                start=event.start_text,
                end=event.end_text,
                description=event.description,
                location=event.location,
                **extra,
            ),
            write=True,
            output={"creation_id": event.creation_id},
        )
        try:
            return check_created(answer)
        except AnswerProblem as exc:
            raise tool_error(
                ErrorCode.UNCERTAIN,
                f"{tool}: {self._path}: {exc}; the event may have been created",
                output={"creation_id": event.creation_id},
            ) from None

    async def find(self, tool: str, creation_id: str) -> dict[str, Any] | None:
        """The adapter's event under ``creation_id``, through its optional ``find_event``."""
        lookup = getattr(self._backend, "find_event", None)
        if not self._creation_id or not callable(lookup):
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"{tool}: {self._path} has no find_event(creation_id=) method: its events "
                "cannot be looked up",
            )
        answer = await self._call(tool, lambda: lookup(creation_id=creation_id), write=False)
        if answer is None:
            return None
        try:
            return {"id": check_created(answer).id}
        except AnswerProblem as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"{tool}: {self._path}.find_event: {exc}"
            ) from None

    async def _call(
        self,
        tool: str,
        call: Callable[[], Awaitable[T]],
        *,
        write: bool,
        output: dict[str, Any] | None = None,
    ) -> T:
        try:
            return await call()
        except ApplicationError as exc:
            if exc.type in _KNOWN_CODES:
                raise  # a tool error the backend raised on purpose
            raise self._unexpected(tool, exc, write, output) from None
        except Exception as exc:
            raise self._unexpected(tool, exc, write, output) from None

    def _unexpected(
        self, tool: str, exc: Exception, write: bool, output: dict[str, Any] | None
    ) -> ApplicationError:
        name = type(exc).__name__
        if write:
            return tool_error(
                ErrorCode.UNCERTAIN,
                f"{tool}: {self._path}.create_event raised {name}; the event may have been "
                "created: check before calling again",
                output=output,
            )
        return tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {self._path} raised {name}")
