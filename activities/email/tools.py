"""``EmailTools``: the four email tools over one ``EmailBackend``.

The tools reach the one mailbox the deployment configured; the model supplies a query, ids and
the parts of a plain-text message, never a server, an account or a credential. The tools own the
deadline of each operation (``email.timeout_seconds``), keep a heartbeat open (how a lost worker
is noticed, and how a cancellation arrives), map the backend's errors at one boundary, and bound
every result again whatever backend produced it.

Drafts and sends are writes: one attempt, never repeated by the tools. Their Message-ID is derived
from the call's idempotency key (``compose.message_id_for``); it is in the approval preview, the
heartbeat (so the history of a lost worker still names it), the result and any uncertain outcome.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio.exceptions import ApplicationError

from toolcalls.activities.base import CallContext
from toolcalls.activities.email.backend import (
    EmailBackend,
    MailBackendError,
    MailConfiguration,
    MailRefused,
    MailRejected,
    MailServiceFailure,
    MailTimeout,
    MailTooLarge,
    MailUnavailable,
    MailUncertain,
    accepts_keyword,
    accepts_message_id,
    tracking_write,
)
from toolcalls.activities.email.compose import message_id_domain, message_id_for, preview_text
from toolcalls.activities.email.mime import MAX_BODY_CHARS, SELECTED_HEADERS
from toolcalls.activities.email.models import (
    ComposeArgs,
    CreateEmailDraftArgs,
    CreateEmailDraftResult,
    ListEmailMessagesArgs,
    ListEmailMessagesResult,
    ReadEmailArgs,
    ReadEmailResult,
    SendEmailArgs,
    SendEmailResult,
)
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.network.service import service_failure
from toolcalls.activities.progress import ProgressPublisher, published, scanned
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode
from toolcalls.workflows.models.reconcile import Lookup, LookupInput

R = TypeVar("R", bound=BaseModel)

_RESULT_FIELDS = {
    "create_email_draft": set(CreateEmailDraftResult.model_fields),
    "send_email": set(SendEmailResult.model_fields),
}


class EmailTools:
    """The email tools of one deployment, over its backend."""

    def __init__(self, settings: EmailSettings, backend: EmailBackend) -> None:
        self._settings = settings
        self._backend = backend
        self._label = settings.backend
        self._sender = settings.from_address
        self._tracks_writes = bool(getattr(backend, "tracks_writes", False))
        """Built-in backends mark when a message may leave; another backend's whole write call
        counts as possibly done."""

    async def list_email_messages(
        self, args: ListEmailMessagesArgs, call: CallContext
    ) -> ListEmailMessagesResult:
        """One page of messages, newest first, with their ids and selected headers."""
        method = self._backend.list_messages
        reports = accepts_keyword(method, "on_progress")

        def listing(beat: Heartbeat, publisher: ProgressPublisher | None) -> Awaitable[Any]:
            kwargs: dict[str, Any] = {}
            if reports:
                kwargs["on_progress"] = scanned(beat, publisher)
            return method(
                query=args.query,
                max_results=args.max_results,
                page_token=args.page_token,
                **kwargs,
            )

        # Only a backend that reports what it scanned has anything to publish.
        async with published(ProgressPublisher.for_activity() if reports else None) as publisher:
            raw = await self._read("list_email_messages", lambda beat: listing(beat, publisher))
        result = _validated("list_email_messages", ListEmailMessagesResult, raw)
        items = result.items[: args.max_results]
        if any(not isinstance(item.get("id"), str) or not item["id"] for item in items):
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                "list_email_messages: the backend listed an item without an id",
            )
        return ListEmailMessagesResult(items=items, next_page_token=result.next_page_token)

    async def read_email(self, args: ReadEmailArgs, call: CallContext) -> ReadEmailResult:
        """One message's selected headers and plain text; never marks it read."""
        raw = await self._read(
            "read_email", lambda _beat: self._backend.get_message(message_id=args.message_id)
        )
        result = _validated("read_email", ReadEmailResult, raw)
        headers = {key: result.headers.get(key) for key in SELECTED_HEADERS}
        if len(result.body) > MAX_BODY_CHARS:
            return result.model_copy(
                update={
                    "headers": headers,
                    "body": result.body[:MAX_BODY_CHARS],
                    "body_truncated": True,
                }
            )
        return result.model_copy(update={"headers": headers})

    async def prepare_create_email_draft(
        self, args: CreateEmailDraftArgs, call: CallContext
    ) -> Prepared:
        return self._prepare("create_email_draft", "Draft", args, call)

    async def create_email_draft(
        self, args: CreateEmailDraftArgs, call: CallContext
    ) -> CreateEmailDraftResult:
        """Save the message as a draft, once; nothing is delivered."""
        create = getattr(self._backend, "create_draft", None)
        if create is None:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"create_email_draft: the {self._label} backend cannot create drafts",
            )
        raw = await self._write("create_email_draft", create, args, call)
        return _validated("create_email_draft", CreateEmailDraftResult, raw, write=True)

    async def prepare_send_email(self, args: SendEmailArgs, call: CallContext) -> Prepared:
        return self._prepare("send_email", "Send", args, call)

    async def send_email(self, args: SendEmailArgs, call: CallContext) -> SendEmailResult:
        """Submit the message, once. Some recipients refused: completed, ``partially_accepted``;
        all refused: a failed call whose output lists the refusals."""
        send = getattr(self._backend, "send_message", None)
        if send is None:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR, f"send_email: the {self._label} backend cannot send"
            )
        raw = await self._write("send_email", send, args, call)
        result = _validated("send_email", SendEmailResult, raw, write=True)
        if result.status == "rejected":
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                "send_email: every recipient was refused; nothing was sent",
                output=result.model_dump(mode="json"),
            )
        return result

    async def reconcile_send_email(self, call: LookupInput) -> Lookup:
        """Whether an uncertain send's message is in the sent folder (read-only)."""
        return await self._lookup("send_email", "sent", call)

    async def reconcile_create_email_draft(self, call: LookupInput) -> Lookup:
        """Whether an uncertain draft is in the drafts folder (read-only)."""
        return await self._lookup("create_email_draft", "drafts", call)

    async def _lookup(self, tool: str, folder: str, call: LookupInput) -> Lookup:
        message_id = _recorded_message_id(tool, call)
        find = getattr(self._backend, "find_message", None)
        if find is None:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"{tool}: the {self._label} backend cannot look a message up by its Message-ID",
            )
        describe = getattr(self._backend, "folder_name", None)
        where = describe(folder) if callable(describe) else f"the {folder} folder"
        checked = f"searched {where} ({self._label}) for Message-ID {message_id}"
        found = await self._read(tool, lambda _beat: find(message_id=message_id, folder=folder))
        if found is None:
            return Lookup(found=False, checked=f"{checked}: not there")
        if not isinstance(found, dict):
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"{tool}: the backend's lookup answer is malformed"
            )
        return Lookup(found=True, checked=checked, evidence={"message_id": message_id, **found})

    def message_id(self, call: CallContext) -> str:
        """The Message-ID of the message this call composes."""
        return message_id_for(call.idempotency_key, message_id_domain(self._domain_address()))

    def _domain_address(self) -> str | None:
        if self._sender is not None:
            return self._sender
        user = self._settings.user_id
        return user if "@" in user else None

    def _prepare(self, tool: str, verb: str, args: ComposeArgs, call: CallContext) -> Prepared:
        """The exact message: sender, recipients, subject, Message-ID and body as sent."""
        message_id = self.message_id(call)
        body = args.body.replace("\r\n", "\n")
        data = {
            "backend": self._label,
            "from": self._sender,
            "to": list(args.to),
            "subject": args.subject,
            "message_id": message_id,
            "body_chars": len(body),
            "body_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(),
        }
        if tool == "create_email_draft" and self._settings.drafts_mailbox is not None:
            data["mailbox"] = self._settings.drafts_mailbox
        shown = ", ".join(args.to[:3]) + (
            f" and {len(args.to) - 3} more" if len(args.to) > 3 else ""
        )
        return Prepared(
            preview=[
                PreviewArtifact(
                    kind="email",
                    title=f"{verb} email to {shown}: {args.subject[:120]}",
                    text=preview_text(
                        sender=self._sender,
                        to=args.to,
                        subject=args.subject,
                        body=body,
                        message_id=message_id,
                    ),
                    data=data,
                )
            ],
            precondition=self._precondition(message_id),
        )

    def _precondition(self, message_id: str) -> dict[str, Any]:
        return {"backend": self._label, "from": self._sender, "message_id": message_id}

    async def _read(self, tool: str, operation: Callable[[Heartbeat], Awaitable[Any]]) -> Any:
        async with Heartbeat(tool=tool) as beat:
            with self._failures(tool, write=False, message_id=None, started=lambda: False):
                async with asyncio.timeout(self._settings.timeout_seconds):
                    return await operation(beat)

    async def _write(
        self,
        tool: str,
        method: Callable[..., Awaitable[dict[str, Any]]],
        args: ComposeArgs,
        call: CallContext,
    ) -> Any:
        message_id = self.message_id(call)
        held = call.precondition
        if held is not None and held != self._precondition(message_id):
            raise tool_error(
                ErrorCode.PRECONDITION_FAILED,
                f"{tool}: the deployment's email settings changed since the message was approved "
                f"(approved from {held.get('from')} via {held.get('backend')}); nothing was sent",
            )
        kwargs: dict[str, Any] = {"to": list(args.to), "subject": args.subject, "body": args.body}
        if accepts_message_id(method):
            kwargs["message_id"] = message_id
        with tracking_write(assume_started=not self._tracks_writes) as state:
            async with Heartbeat(tool=tool, message_id=message_id):
                with self._failures(
                    tool, write=True, message_id=message_id, started=lambda: state.may_have_happened
                ):
                    async with asyncio.timeout(self._settings.timeout_seconds):
                        raw = await method(**kwargs)
        if isinstance(raw, dict):
            raw.setdefault("message_id", message_id if "message_id" in kwargs else None)
            if tool in _RESULT_FIELDS:
                extra = {k: raw.pop(k) for k in list(raw) if k not in _RESULT_FIELDS[tool]}
                if extra:
                    raw["service"] = {**(raw.get("service") or {}), **extra}
        return raw

    @contextmanager
    def _failures(
        self, tool: str, *, write: bool, message_id: str | None, started: Callable[[], bool]
    ) -> Iterator[None]:
        """The backend's errors, the deadline and a cancellation as this tool's errors."""
        check = f" look for Message-ID {message_id} before writing it again" if message_id else ""
        try:
            yield
        except ApplicationError:
            raise
        except MailRefused as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"{tool}: {exc}", output=exc.result
            ) from None
        except MailUncertain as exc:
            raise _uncertain(tool, str(exc), message_id, check) from None
        except MailTooLarge as exc:
            if write:
                raise tool_error(
                    ErrorCode.INVALID_ARGUMENTS, f"{tool}: {exc}", fixable_args=["body"]
                ) from None
            raise tool_error(ErrorCode.OUTPUT_TOO_LARGE, f"{tool}: {exc}") from None
        except MailRejected as exc:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS, f"{tool}: {exc}", fixable_args=[exc.argument]
            ) from None
        except MailConfiguration as exc:
            raise tool_error(ErrorCode.CONFIGURATION_ERROR, f"{tool}: {exc}") from None
        except MailUnavailable as exc:
            raise tool_error(
                ErrorCode.NETWORK_UNAVAILABLE,
                f"{tool}: {exc}",
                retryable=True,
                next_retry_delay=exc.retry_after,
            ) from None
        except MailTimeout as exc:
            raise tool_error(ErrorCode.TIMED_OUT, f"{tool}: {exc}", retryable=not write) from None
        except MailServiceFailure as exc:
            output = {"message_id": message_id} if message_id else None
            raise service_failure(
                tool, exc.service, exc.cause, write=write, output=output
            ) from None
        except MailBackendError as exc:
            raise tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {exc}") from None
        except TimeoutError:
            limit = f"{self._settings.timeout_seconds:g} s (email.timeout_seconds)"
            if write and started():
                raise _uncertain(tool, f"no answer within {limit}", message_id, check) from None
            raise tool_error(
                ErrorCode.TIMED_OUT, f"{tool}: no answer within {limit}", retryable=not write
            ) from None
        except asyncio.CancelledError:
            if write and started():
                raise _uncertain(
                    tool, "canceled while the message was being written", message_id, check
                ) from None
            raise
        except Exception as exc:
            if write and started():
                raise _uncertain(
                    tool, f"the backend failed ({type(exc).__name__})", message_id, check
                ) from None
            raise


def _recorded_message_id(tool: str, call: LookupInput) -> str:
    """The Message-ID the uncertain call recorded, which must be the one its idempotency key
    gives (the domain may differ if the sender changed since): nothing else is searched for."""
    recorded = (call.output or {}).get("message_id")
    digest = message_id_for(call.idempotency_key, "x").partition(".toolcalls@")[0]
    if not isinstance(recorded, str) or not recorded.startswith(f"{digest}.toolcalls@"):
        raise tool_error(
            ErrorCode.INVALID_ARGUMENTS,
            f"{tool}: the call recorded no Message-ID of its own to look for",
        )
    return recorded


def _uncertain(tool: str, what: str, message_id: str | None, check: str) -> ApplicationError:
    return tool_error(
        ErrorCode.UNCERTAIN,
        f"{tool}: {what}; the message may have been written:{check}",
        output={"message_id": message_id},
    )


def _validated(tool: str, model: type[R], raw: Any, *, write: bool = False) -> R:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        where = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'result'}: {e['msg']}"
            for e in exc.errors()[:3]
        )
        if write:
            # The service did answer: the message was most likely written.
            raise tool_error(
                ErrorCode.UNCERTAIN,
                f"{tool}: the backend's answer is malformed ({where}); the message was probably "
                "written: check before writing it again",
                output={"message_id": raw.get("message_id") if isinstance(raw, dict) else None},
            ) from None
        raise tool_error(
            ErrorCode.EXECUTION_FAILED, f"{tool}: the backend's answer is malformed ({where})"
        ) from None
