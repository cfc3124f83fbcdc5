"""Stopping a call: ``ToolCallClient.cancel``.

A cancellation is a request to the Temporal server, so it reaches the call wherever it runs: the
worker that runs its tool learns of it at its next heartbeat, whichever worker or client sent it.
What the call then ends with is the workflow's business (``docs/statuses.md``): ``canceled`` when
nothing had begun, ``uncertain`` for a write that may have.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus
from toolcalls.workflows.models.inline import split_inline_id
from toolcalls.workflows.models.views import CallNotFound, Handle

MAX_REASON_CHARS = 2_000
"""The longest reason a cancellation carries (it is recorded in the call's history)."""


@dataclass(frozen=True)
class Cancellation:
    """What became of a request to stop a call."""

    workflow_id: str
    requested: bool
    """Whether the request went to a running call (it ends soon after); ``False``: it had
    ended already, and nothing was changed."""
    ended: CallStatus | str | None = None
    """How the call had ended, when it had: its status, or the workflow's for one that ended
    without a result (``terminated``, say)."""


async def cancel_call(client: Client, workflow_id: str, reason: str | None = None) -> Cancellation:
    """Ask the call ``workflow_id`` to stop.

    Raises:
        CallNotFound: no workflow has this id, or it names an inline call (which runs inside its
            parent: cancel the parent).
        ValueError: the reason is over ``MAX_REASON_CHARS``.
    """
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise ValueError(
            f"the reason has {len(reason)} characters; the limit is {MAX_REASON_CHARS}"
        )
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
    try:
        description = await handle.describe()
    except RPCError as exc:
        if exc.status is not RPCStatusCode.NOT_FOUND:
            raise
        split = split_inline_id(workflow_id)
        if split is not None:
            raise CallNotFound(
                f"{workflow_id}: no call workflow has this id; an inline call runs inside its "
                f"parent {split[0]}: cancel the parent"
            ) from None
        raise CallNotFound(f"{workflow_id}: no call has this id") from None
    if description.status is not WorkflowExecutionStatus.RUNNING:
        return Cancellation(workflow_id, requested=False, ended=await _ended(handle, description))
    try:
        await handle.cancel(reason=reason or "")
    except RPCError as exc:
        if exc.status is not RPCStatusCode.NOT_FOUND:
            raise
        # It ended between the two requests.
        description = await handle.describe()
        return Cancellation(workflow_id, requested=False, ended=await _ended(handle, description))
    return Cancellation(workflow_id, requested=True)


async def _ended(handle: Handle, description: WorkflowExecutionDescription) -> CallStatus | str:
    """How a call that is not running ended."""
    status = description.status
    if status is WorkflowExecutionStatus.COMPLETED:
        result = await handle.result(follow_runs=False)
        return result.status
    return status.name.lower() if status is not None else "ended"
