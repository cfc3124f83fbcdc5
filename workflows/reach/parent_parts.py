"""What ``ToolCalls`` (``toolcalls.workflows.reach.parent``) keeps beside its calls: each call's
turn in the budget's order, the calls made so far, and the results it makes itself, for a call that
ended without (or beyond) its child or inline run."""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TerminatedError,
    TimeoutError as TemporalTimeoutError,
)

from toolcalls.workflows.models.call import (
    CallEvent,
    CallStatus,
    ErrorCode,
    EventKind,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
)


class Turn:
    """A call's place in the budget's order: it is charged once the call before it was."""

    def __init__(self, before: asyncio.Event | None) -> None:
        self.before = before
        self.done = asyncio.Event()
        """Set once this call was charged, or ended without being charged."""

    async def ready(self) -> None:
        if self.before is not None and not self.before.is_set():
            await self.before.wait()


class MadeCall:
    """A call made through one ``ToolCalls``: a repeat of its call id gets its result."""

    def __init__(self, request: ToolCallRequest) -> None:
        self.request = request
        self.result: asyncio.Future[ToolCallResult] = asyncio.get_running_loop().create_future()

    async def joined(self, request: ToolCallRequest, child_id: str) -> ToolCallResult:
        """The first call's result for the same call; a refusal for another under its id."""
        first = self.request
        if (first.tool, first.arguments) != (request.tool, request.arguments):
            return local_result(
                request,
                child_id,
                CallStatus.FAILED,
                ErrorCode.PRECONDITION_FAILED,
                f"call {request.call_id} was already made with another tool or other arguments "
                f"as {child_id}; not starting it again",
            )
        return await asyncio.shield(self.result)


def local_result(
    request: ToolCallRequest,
    child_id: str,
    status: CallStatus,
    code: ErrorCode | None = None,
    message: str = "",
    *,
    error: ToolError | None = None,
) -> ToolCallResult:
    """A result for a call that ended in the parent, without (or beyond) its child."""
    now = workflow.now()
    error = error or ToolError(code=code or ErrorCode.INTERNAL, message=message)
    return ToolCallResult(
        workflow_id=child_id,
        call_id=request.call_id or "",
        tool=request.tool,
        status=status,
        error=error,
        events=[CallEvent(at=now, kind=EventKind.FINISHED, message=f"{status}: {error.message}")],
        started_at=now,
        finished_at=now,
    )


def already_started(request: ToolCallRequest, child_id: str) -> ToolCallResult:
    return local_result(
        request,
        child_id,
        CallStatus.FAILED,
        ErrorCode.PRECONDITION_FAILED,
        f"call {request.call_id} was already started as {child_id}; not starting it again",
    )


def child_failed(
    request: ToolCallRequest, child_id: str, err: ChildWorkflowError
) -> ToolCallResult:
    """A child that did not return a result: canceled, terminated, timed out or broken."""
    cause = err.cause
    if isinstance(cause, CancelledError):
        return local_result(
            request, child_id, CallStatus.CANCELED, ErrorCode.CANCELED, "the call was canceled"
        )
    if isinstance(cause, TemporalTimeoutError):
        return local_result(
            request, child_id, CallStatus.TIMED_OUT, ErrorCode.TIMED_OUT, "the call timed out"
        )
    if isinstance(cause, TerminatedError):
        message = "the call was terminated; its effect is unknown"
        return local_result(request, child_id, CallStatus.UNCERTAIN, ErrorCode.UNCERTAIN, message)
    detail = cause.message if isinstance(cause, ApplicationError) else str(cause or err)
    return local_result(
        request, child_id, CallStatus.FAILED, ErrorCode.INTERNAL, f"the call failed: {detail}"
    )
