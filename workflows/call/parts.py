"""The pieces of a call's life that need no workflow state: how it ended, how an error code
maps to a status, its deadline, and what its arguments and heartbeats hold."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError, CancelledError, TimeoutType

from toolcalls.workflows.models.call import (
    CallPlan,
    CallStatus,
    ErrorCode,
    SideEffect,
    ToolCallRequest,
    ToolCallResult,
)

_STATUS_FOR_CODE = {
    ErrorCode.POLICY_DENIED: CallStatus.DENIED,
    ErrorCode.APPROVAL_DENIED: CallStatus.DENIED,
    ErrorCode.APPROVAL_TIMED_OUT: CallStatus.DENIED,
    ErrorCode.BUDGET_EXCEEDED: CallStatus.DENIED,
    ErrorCode.CONNECTION_REQUIRED: CallStatus.DENIED,
    ErrorCode.TIMED_OUT: CallStatus.TIMED_OUT,
    ErrorCode.CANCELED: CallStatus.CANCELED,
    ErrorCode.UNCERTAIN: CallStatus.UNCERTAIN,
}


CANCELED_WRITE_PATCH = "toolcalls-canceled-write-uncertain"
"""A write canceled while it ran ends ``uncertain``, not ``canceled``: calls that recorded the
older outcome replay it."""


def canceled_write(plan: CallPlan, cause: BaseException | None) -> bool:
    """Whether a cancellation of the call stopped its write after the tool had started (the
    caller knows it had): the effect may have begun. Called only then, so that the patch's
    marker is recorded on that path alone."""
    canceled = isinstance(cause, CancelledError) or (
        isinstance(cause, ApplicationError) and cause.type == ErrorCode.CANCELED.value
    )
    return (
        canceled
        and plan.side_effect is SideEffect.WRITE
        and workflow.cancellation_reason() is not None
        and workflow.patched(CANCELED_WRITE_PATCH)
    )


def after_canceled_write(tool: str, cause: BaseException | None) -> tuple[CallStatus, str, object]:
    """The status, message and output of a call whose write was canceled while it ran.

    A tool that stopped before its change and undid what it had begun says so (``changed:
    false`` in its output): the call ends ``canceled`` with the tool's words. Otherwise it ends
    ``uncertain`` with what the tool reported (``execute_command: canceled; the process group was
    killed``) and its partial output, the command's exit status when it had one, and that the
    effect may have happened."""
    said, output = None, None
    if isinstance(cause, ApplicationError):
        said = cause.message
        details = cause.details[0] if cause.details else None
        output = details.get("output") if isinstance(details, dict) else None
    if said and isinstance(output, dict) and output.get("changed") is False:
        return CallStatus.CANCELED, said, output
    parts = [said or f"{tool}: canceled while it ran"]
    if isinstance(output, dict) and "exit_code" in output:
        code = output.get("exit_code")
        parts.append("no exit status" if code is None else f"exit status {code}")
    parts.append("the effect may have begun: inspect before calling again")
    return CallStatus.UNCERTAIN, "; ".join(parts), output


class _Ended(Exception):
    """Carries a finished result out of a nested step."""

    def __init__(self, result: ToolCallResult) -> None:
        super().__init__(result.status)
        self.result = result


class _Refused(Exception):
    """An activity failed through its input's fault where the caller refuses that input instead
    of ending the call (an edit whose preview the tool refuses)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _non_finite(arguments: dict[str, Any]) -> list[str]:
    """The arguments holding a NaN or an infinity anywhere inside (checked without recursion)."""
    bad = []
    for name, value in arguments.items():
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                bad.append(name)
                break
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return bad


def _deadline(request: ToolCallRequest, started: datetime) -> datetime | None:
    """The earlier of ``deadline`` and ``started + timeout``; ``None`` when neither is set."""
    candidates = []
    if request.deadline is not None:
        # A naive time cannot be compared with workflow time: the TypeError would fail every
        # workflow task forever. Read it as UTC, like every time Temporal records.
        deadline = request.deadline
        candidates.append(deadline if deadline.tzinfo else deadline.replace(tzinfo=UTC))
    if request.timeout is not None:
        candidates.append(started + request.timeout)
    return min(candidates, default=None)


def _last_progress(details: Sequence[Any]) -> dict[str, Any] | None:
    """The progress a tool last heartbeated (``toolcalls.activities.heartbeat``), if it was an
    object."""
    last = details[-1] if details else None
    return last if isinstance(last, dict) else None


def _name(kind: TimeoutType | None) -> str:
    return kind.name.lower().replace("_", "-") if kind is not None else "unknown"
