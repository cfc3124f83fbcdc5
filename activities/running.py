"""How a tool's method is called inside its activity, how its failures leave it, and a write
tool's reconcile activity.

A tool's expected failure (an ``ApplicationError`` whose ``type`` is an ``ErrorCode``) is logged as
one line naming the tool, the call and the code, and leaves as a ``BENIGN`` error, which the SDK
logs at DEBUG without a traceback. An unexpected one (``internal``, or not typed) keeps the SDK's
warning with its traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from toolcalls.activities.base import CallContext, ToolArgs
from toolcalls.activities.connections.acting import acting_principal
from toolcalls.activities.errors import tool_error
from toolcalls.activities.spec import ToolSpec
from toolcalls.workflows.models.call import ErrorCode, ExecuteInput, ToolError
from toolcalls.workflows.models.reconcile import Lookup, LookupInput, reconcile_activity_name

ToolMethod = Callable[[ToolArgs, CallContext], Awaitable[Any]]

log = logging.getLogger("toolcalls.activities.runtime")
LOGGED_MESSAGE_CHARS = 300
"""An expected failure's message is cut to this in its log line."""
_EXPECTED_CODES = frozenset(code.value for code in ErrorCode) - {ErrorCode.INTERNAL.value}


@contextlib.contextmanager
def expected_failures(activity_name: str, input: ExecuteInput) -> Iterator[None]:
    """Log a tool's expected failure in one line and let it leave as a ``BENIGN`` error."""
    try:
        yield
    except ApplicationError as err:
        if err.type not in _EXPECTED_CODES or err.category is ApplicationErrorCategory.BENIGN:
            raise
        workflow_id = activity.info().workflow_id
        log.info(
            "%s call %s (workflow %s) failed: %s: %s",
            activity_name,
            input.call_id,
            workflow_id,
            err.type,
            " ".join(err.message.split())[:LOGGED_MESSAGE_CHARS],
            # Fields of their own for structured logs (``log_format = "json"``).
            extra={
                "tool": input.tool,
                "call_id": input.call_id,
                "workflow_id": workflow_id,
                "error_code": err.type,
            },
        )
        raise ApplicationError(
            err.message,
            *err.details,
            type=err.type,
            non_retryable=err.non_retryable,
            next_retry_delay=err.next_retry_delay,
            category=ApplicationErrorCategory.BENIGN,
        ) from None


def failure_of(tool: str, exc: ApplicationError) -> tuple[ToolError, Any]:
    """The ``ToolError`` and partial output of a tool's failure, as the workflow maps one."""
    details = exc.details[0] if exc.details and isinstance(exc.details[0], dict) else {}
    kind = exc.type or ""
    known = kind in {code.value for code in ErrorCode}
    code = ErrorCode(kind) if known else ErrorCode.EXECUTION_FAILED
    error = ToolError(
        code=code,
        message=exc.message if known else f"{tool}: {kind}: {exc.message}",
        retryable=not exc.non_retryable,
        fixable_args=list(details.get("fixable_args") or []),
    )
    return error, details.get("output")


async def call_tool(spec: ToolSpec, method: ToolMethod, args: ToolArgs, input: ExecuteInput) -> Any:
    info = activity.info()
    context = CallContext(
        workflow_id=info.workflow_id or "",
        call_id=input.call_id,
        idempotency_key=input.idempotency_key,
        approval=input.approval,
        precondition=input.precondition,
        visible_tools=input.visible_tools,
        principal=input.principal,
    )
    acting = acting_principal.set(input.principal)
    try:
        return await method(args, context)
    except (ApplicationError, asyncio.CancelledError):
        raise
    except Exception as exc:
        activity.logger.exception("%s failed unexpectedly", spec.name)
        raise tool_error(
            ErrorCode.INTERNAL, f"{spec.name}: unexpected {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        acting_principal.reset(acting)


def reconcile_activity(
    spec: ToolSpec, method: Callable[[LookupInput], Awaitable[Lookup]]
) -> Callable[..., Any]:
    """A write tool's read-only lookup of an uncertain call's effect (``ToolCallReconcile``)."""

    @activity.defn(name=reconcile_activity_name(spec.name))
    async def reconcile(input: LookupInput) -> Lookup:
        if input.tool != spec.name:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS, f"{spec.name}: a lookup for {input.tool} came here"
            )
        return await method(input)

    return reconcile
