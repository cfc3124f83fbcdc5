"""How a failed tool activity ends the call: its status, the ``ToolError`` and the output kept.

Pure functions of the plan and the failure (no workflow state), so ``CallBase._activity`` only
makes the result of what they say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    TimeoutError as ActivityTimeoutError,
    TimeoutType,
)

from toolcalls.workflows.call.parts import _STATUS_FOR_CODE, _last_progress, _name
from toolcalls.workflows.models.call import CallPlan, CallStatus, ErrorCode, SideEffect, ToolError

_KNOWN_CODES = {code.value for code in ErrorCode}

Ending = tuple[CallStatus, ToolError, Any]
"""The call's status, its error and its output."""


def failed(plan: CallPlan, cause: BaseException | None, *, started: bool) -> Ending:
    """Map an activity failure to the call's status and ``ToolError``."""
    tool = plan.tool
    if isinstance(cause, ApplicationError):
        details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
        kind = cause.type or ""
        code = ErrorCode(kind) if kind in _KNOWN_CODES else ErrorCode.EXECUTION_FAILED
        message = cause.message if code.value == kind else f"{tool}: {kind}: {cause.message}"
        error = ToolError(
            code=code,
            message=message,
            retryable=not cause.non_retryable,
            fixable_args=list(details.get("fixable_args") or []),
        )
        return _STATUS_FOR_CODE.get(code, CallStatus.FAILED), error, details.get("output")
    if isinstance(cause, CancelledError):
        return _ending(CallStatus.CANCELED, ErrorCode.CANCELED, f"{tool}: canceled")
    if isinstance(cause, ActivityTimeoutError):
        return timed_out(plan, cause.type, started=started, progress=cause.last_heartbeat_details)
    return _ending(CallStatus.FAILED, ErrorCode.INTERNAL, f"{tool}: {cause}")


def timed_out(
    plan: CallPlan, kind: TimeoutType | None, *, started: bool, progress: Sequence[Any] = ()
) -> Ending:
    opts = plan.activity
    assert opts is not None
    tool = plan.tool
    if kind is TimeoutType.SCHEDULE_TO_START or (
        kind is TimeoutType.SCHEDULE_TO_CLOSE and not started and not opts.local
    ):
        error = ToolError(
            code=ErrorCode.TOOL_UNAVAILABLE,
            message=(
                f"{tool}: no worker took the task from queue "
                f"{opts.task_queue or workflow.info().task_queue!r} in time; nothing ran"
            ),
            retryable=True,
        )
        return CallStatus.FAILED, error, None
    if plan.side_effect is SideEffect.WRITE:
        # The tool's last heartbeat is what it said it was doing (a creation's identity, say):
        # the output an operator inspects with. It is in history already, in the timeout.
        return _ending(
            CallStatus.UNCERTAIN,
            ErrorCode.UNCERTAIN,
            f"{tool}: the worker was lost after the tool started ({_name(kind)} timeout); "
            "the effect may have happened: inspect before calling again",
            _last_progress(progress),
        )
    return _ending(CallStatus.TIMED_OUT, ErrorCode.TIMED_OUT, f"{tool}: {_name(kind)} timeout")


def _ending(status: CallStatus, code: ErrorCode, message: str, output: Any = None) -> Ending:
    return status, ToolError(code=code, message=message), output
