"""Reconciling an ``uncertain`` call from a client: ``ToolCallClient.reconcile`` and the answer
``ToolCallClient.status`` shows.

The call's workflow has ended, so nothing is sent to it: the client reads its result and history
(the task queue its tool ran on), then runs the call's one ``ToolCallReconcile`` workflow on the
deployment's task queue. An answer already recorded as ``found`` is returned as it is; otherwise
the workflow runs again (the effect may have shown up since). The write is never run again.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.call.reconcile import ToolCallReconcileWorkflow
from toolcalls.workflows.models.call import CallStatus, ToolCallResult
from toolcalls.workflows.models.reconcile import (
    LookupInput,
    ReconcileRequest,
    Reconciliation,
    Settled,
    reconcile_workflow_id,
)
from toolcalls.workflows.reach.client_base import ClientBase, Inline

RECONCILE_WAIT = timedelta(minutes=10)
"""Bounds a ``ToolCallReconcile`` run: no worker of the deployment may be serving it."""


class NotReconcilable(ValueError):
    """The call is not one that reconciling applies to: it did not end ``uncertain``."""


async def reconcile_call(calls: ClientBase, workflow_id: str) -> Reconciliation:
    """``ToolCallClient.reconcile``: the call's result and description, then ``reconcile``."""
    try:
        handle, description = await calls.described(workflow_id)
    except Inline:
        raise NotReconcilable(
            f"{workflow_id} is an inline call: reconcile it from its parent's result"
        ) from None
    if description.status is not WorkflowExecutionStatus.COMPLETED:
        raise NotReconcilable(
            f"{workflow_id} has not ended with a result: only an uncertain call can be reconciled"
        )
    result = await handle.result()
    queue = description.task_queue or calls.task_queue
    return await reconcile(calls.client, workflow_id, result, queue)


async def reconcile(
    client: Client, workflow_id: str, result: ToolCallResult, task_queue: str
) -> Reconciliation:
    """The recorded ``found`` answer, or a new lookup's answer, for the uncertain call
    ``workflow_id`` whose ``result`` this is; ``task_queue``: the deployment's."""
    if result.status is not CallStatus.UNCERTAIN:
        raise NotReconcilable(
            f"{workflow_id} ended {result.status.value}: only an uncertain call can be reconciled"
        )
    recorded = await recorded_answer(client, workflow_id)
    if recorded is not None and recorded.outcome is Settled.FOUND:
        return recorded
    output = result.output if isinstance(result.output, dict) else None
    request = ReconcileRequest(
        lookup=LookupInput(
            workflow_id=result.workflow_id,
            call_id=result.call_id,
            tool=result.tool,
            idempotency_key=f"{result.workflow_id}:{result.call_id}",
            output=output,
        ),
        task_queue=await _tool_queue(client, workflow_id, result.tool) or task_queue,
    )
    handle = await client.start_workflow(
        ToolCallReconcileWorkflow.run,
        request,
        id=reconcile_workflow_id(workflow_id),
        task_queue=task_queue,
        execution_timeout=RECONCILE_WAIT,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        # Two clients at once share one lookup.
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    return await handle.result()


async def recorded_answer(client: Client, workflow_id: str) -> Reconciliation | None:
    """The last answer recorded for the call ``workflow_id``, if a lookup has finished."""
    handle: WorkflowHandle[ToolCallReconcileWorkflow, Reconciliation] = client.get_workflow_handle(
        reconcile_workflow_id(workflow_id), result_type=Reconciliation
    )
    try:
        description = await handle.describe()
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            return None
        raise
    if description.status is not WorkflowExecutionStatus.COMPLETED:
        return None
    return await handle.result()


async def _tool_queue(client: Client, workflow_id: str, tool: str) -> str | None:
    """The task queue the call's tool activity was scheduled on (its workers hold the
    credentials), from the call's history."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == tool:
                return scheduled.task_queue.name or None
    return None
