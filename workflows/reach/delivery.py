"""A decision's or an answer's way to a workflow, whichever client sends it: the reason a refused
update gives, the signal sent when no worker takes the update, and what an ended workflow means.

Shared by the client's two routes to a call: the call's own workflow (``client_base``) and the
parent of an inline call (``client_inline``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel
from temporalio.client import (
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.models.approval import ApprovalDecision, ApprovalRecord
from toolcalls.workflows.models.call import ToolCallResult
from toolcalls.workflows.models.question import AskUserOutput, UserAnswer
from toolcalls.workflows.models.views import Delivery, Outcome, model_or_none
from toolcalls.workflows.rules.identities import same_identity

CALL_ENDED = "the call has ended"
NO_ANSWER = (
    RPCStatusCode.CANCELLED,  # how the SDK reports its own RPC timeout
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.FAILED_PRECONDITION,  # "no poller seen for task queue recently"
)
"""The statuses of an RPC that got no answer in time: no worker took it, or the server was busy."""


def update_reason(exc: WorkflowUpdateFailedError) -> str:
    """Why the workflow refused an update (its validator's or handler's message)."""
    cause = exc.cause
    return cause.message if isinstance(cause, ApplicationError) else str(cause or exc)


async def signal_after_timeout(
    handle: WorkflowHandle[Any, Any],
    exc: WorkflowUpdateRPCTimeoutOrCancelledError,
    signal: Any,
    payload: object,
    *,
    ended: str = CALL_ENDED,
) -> Outcome:
    """Send ``signal`` when an update timed out: no worker took it in time (for an inline call,
    the worker that answered the probe did not).

    If the update was delivered after all, the workflow takes the first of the two and records
    the other as ignored; if it was delivered and the workflow has ended since, there is nothing
    left to signal and the outcome is ``REJECTED`` with ``ended`` as the reason (``queue_signal``).
    A cancellation of the caller is not a timeout: it propagates.
    """
    if isinstance(exc.__cause__, asyncio.CancelledError):
        raise asyncio.CancelledError
    return await queue_signal(handle, signal, payload, ended=ended)


async def queue_signal(
    handle: WorkflowHandle[Any, Any], signal: Any, payload: object, *, ended: str = CALL_ENDED
) -> Outcome:
    """Send ``signal``: ``QUEUED`` until a worker applies it, or ``REJECTED`` with ``ended`` as
    the reason when the workflow has ended (since it was described), as for any decision sent to
    a call that has ended."""
    try:
        await handle.signal(signal, payload)
    except RPCError as err:
        if err.status is RPCStatusCode.NOT_FOUND:
            return Outcome(Delivery.REJECTED, reason=ended)
        raise
    return Outcome(Delivery.QUEUED)


def applied_by_update(
    result: ToolCallResult, sent: BaseModel
) -> ApprovalRecord | AskUserOutput | None:
    """What the ended call applied of ``sent`` (a decision or an answer) by update, as its
    ``result`` records it; ``None`` when it did not."""
    if isinstance(sent, ApprovalDecision):
        for record in [*result.approvals, result.approval]:
            if (
                record is not None
                and record.via == "update"
                and (
                    (record.request_id, record.approved, record.reason, record.response)
                    == (sent.request_id, sent.approved, sent.reason, sent.response)
                )
                # The call records the approver's canonical name.
                and (
                    record.approver == sent.approver
                    or same_identity(record.approver, sent.approver)
                )
            ):
                return record
        return None
    output = model_or_none(AskUserOutput, result.output)
    if isinstance(sent, UserAnswer) and output is not None and output.answer == sent.answer:
        return output if output.request_id == sent.request_id else None
    return None
