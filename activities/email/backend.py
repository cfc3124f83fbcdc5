"""The contract between the email tools and a mailbox: ``EmailBackend``.

A backend owns its connections, credentials and the service's search syntax; the tools own the
arguments (validated before any approval), the Message-ID of composed mail, heartbeats, the
deadline, and the mapping of the errors below to tool errors. Every message is short, lowercase
and safe to show: no secret, no private server text.

    MailBackendError          anything the backend reports about a call
    ├── MailRejected          an argument the backend refuses (``argument`` names it): the model
    │   │                     can fix it (a stale id, a query the service cannot take)
    │   └── MailNotFound      the id names no message (any more)
    ├── MailTooLarge          a message over ``max_message_bytes``
    ├── MailConfiguration     the deployment's to fix: credentials, a missing folder, a server
    │                         that will not do TLS, a certificate that does not verify
    ├── MailUnavailable       the service could not be reached for now; nothing was written
    ├── MailTimeout           reached, but no answer in time; nothing was written
    ├── MailServiceFailure    a service API request failed (``toolcalls.activities.network.service``
    │                         charges it: a status, an outage, a response over the cap)
    ├── MailUncertain         a write may have happened: inspect before sending again
    ├── MailNotAsPreviewed    the serialized message differs from the approval preview; nothing
    │                         was written
    └── MailRefused           a send no recipient was accepted for (``result`` says why)
"""

from __future__ import annotations

import contextvars
import importlib
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, runtime_checkable

from toolcalls.activities.network.failures import NetworkError
from toolcalls.activities.network.service import ServiceError

ListProgress = Callable[[int, int | None], None]
"""``(done, total)``: messages a listing has scanned so far, and how many it will (or ``None``)."""


@runtime_checkable
class EmailBackend(Protocol):
    """A mailbox the tools can list, read, draft in and send from.

    Read-only backends need only ``list_messages`` and ``get_message``. ``create_draft`` and
    ``send_message`` may also take a ``message_id`` keyword: the RFC 5322 Message-ID the tools
    derived from the call's idempotency key, to put on the message so that a copy can be found
    later. An optional ``query_help`` string is added to ``list_email_messages``'s description.
    An optional ``find_message(*, message_id, folder)`` coroutine (``folder`` is ``"sent"`` or
    ``"drafts"``) returns a dict describing the message with that Message-ID, or ``None``: it is
    how ``toolcalls reconcile`` settles an uncertain write; an optional ``folder_name(folder)``
    says what it searched.

    ``list_messages`` may also take an ``on_progress: ListProgress | None = None`` keyword: the
    tools pass it only to a method that has it (so a backend without it satisfies this protocol
    and lists as before), and the backend calls it on the event loop with the messages scanned so
    far and how many it will scan, when it knows (the built-in backends do).
    """

    async def list_messages(
        self, *, query: str, max_results: int, page_token: str | None
    ) -> dict[str, Any]:
        """``{"items": [{"id": ..., "from": ..., ...}], "next_page_token": str | None}``."""
        ...

    async def get_message(self, *, message_id: str) -> dict[str, Any]:
        """``{"id", "headers", "snippet", "body", "body_truncated", "has_attachments",
        "html_body_omitted"}`` for the list item ``message_id``."""
        ...


class MailBackendError(Exception):
    """A failure the backend reports; the message is short, lowercase and safe to show."""


class MailRejected(MailBackendError):
    """An argument the backend refuses; ``argument`` names which."""

    def __init__(self, message: str, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class MailNotFound(MailRejected):
    """The message an id names does not exist (any more)."""


class MailTooLarge(MailBackendError):
    """A message larger than ``max_message_bytes``; refused before it was transferred."""


class MailNotAsPreviewed(MailBackendError):
    """The message about to be written has header fields or values the approver did not see."""


class MailConfiguration(MailBackendError):
    """Something the deployment must fix (the message names the setting)."""


class MailUnavailable(MailBackendError):
    """The service could not be reached for now; nothing was written."""

    def __init__(self, message: str, retry_after: timedelta | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class MailTimeout(MailBackendError):
    """The service was reached but did not answer in time; nothing was written."""


class MailServiceFailure(MailBackendError):
    """A request to a service API failed; ``cause`` is the service client's error, which
    ``toolcalls.activities.network.service.service_failure`` turns into the tool's error."""

    def __init__(self, service: str, cause: ServiceError | NetworkError) -> None:
        super().__init__(f"{service}: {cause.reason}")
        self.service = service
        self.cause = cause


class MailUncertain(MailBackendError):
    """A write may have reached the service; whether it took effect is unknown."""


class MailRefused(MailBackendError):
    """No recipient was accepted; ``result`` is the send result with the refusals."""

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class WriteState:
    """Whether the current write may already have reached the service."""

    may_have_happened: bool


_WRITE: contextvars.ContextVar[WriteState | None] = contextvars.ContextVar(
    "email_write", default=None
)


@contextmanager
def tracking_write(assume_started: bool) -> Iterator[WriteState]:
    """Track one write; a backend that does not call ``write_point`` is ``assume_started``."""
    state = WriteState(may_have_happened=assume_started)
    token = _WRITE.set(state)
    try:
        yield state
    finally:
        _WRITE.reset(token)


def write_point() -> None:
    """Mark, from inside a built-in backend, that the message may now leave: a failure or a
    timeout from here on is uncertain."""
    state = _WRITE.get()
    if state is not None:
        state.may_have_happened = True


def accepts_message_id(method: Callable[..., Any]) -> bool:
    """Whether a backend's write method takes the ``message_id`` keyword."""
    return accepts_keyword(method, "message_id")


def accepts_keyword(method: Callable[..., Any], name: str) -> bool:
    """Whether a backend's method takes the keyword ``name`` (or any keyword)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def load_factory(path: str) -> Callable[..., Any]:
    """The callable at ``package.module:Name`` (or ``package.module.Name``)."""
    module_name, _, attribute = path.partition(":")
    if not attribute:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise ValueError(f"{path!r} is not an import path (package.module:Factory)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name}: {exc}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{module_name} has no callable {attribute}")
    return factory  # type: ignore[no-any-return]
