"""``ToolCallReconcile``: one read-only lookup of an uncertain call's effect, recorded.

The call's own workflow has ended, so the answer is recorded here instead: a workflow per call
(``reconcile_workflow_id``) that runs the tool's lookup activity on the task queue the tool ran on
(its workers hold the credentials) and returns what it found. ``ToolCallClient.reconcile`` returns a
``found`` answer as recorded and runs the workflow again while the answer is ``not_found``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, FailureError

from toolcalls.workflows.models.call import ErrorCode
from toolcalls.workflows.models.reconcile import (
    RECONCILE_WORKFLOW,
    Lookup,
    ReconcileRequest,
    Reconciliation,
    Settled,
    reconcile_activity_name,
)

LOOKUP_START_TO_CLOSE = timedelta(seconds=150)
"""Longer than any lookup's own deadline (the email and calendar tools end theirs at 120 s)."""
LOOKUP_HEARTBEAT = timedelta(seconds=10)
LOOKUP_SCHEDULE_TO_START = timedelta(seconds=60)
"""No worker serving the tool picked the lookup up: nothing was checked."""
_TOOL_ERRORS = frozenset(code.value for code in ErrorCode)
"""Errors the tools raise themselves, whose messages are written to be shown."""
LOOKUP_ATTEMPTS = 3
"""A lookup only reads: transient failures may be tried again, typed ones are final."""


@workflow.defn(name=RECONCILE_WORKFLOW)
class ToolCallReconcileWorkflow:
    """Looks for an uncertain call's effect once and returns the ``Reconciliation``."""

    @workflow.run
    async def run(self, request: ReconcileRequest) -> Reconciliation:
        call = request.lookup
        try:
            lookup: Lookup = await workflow.execute_activity(
                reconcile_activity_name(call.tool),
                call,
                result_type=Lookup,
                task_queue=request.task_queue,
                start_to_close_timeout=LOOKUP_START_TO_CLOSE,
                schedule_to_start_timeout=LOOKUP_SCHEDULE_TO_START,
                heartbeat_timeout=LOOKUP_HEARTBEAT,
                retry_policy=RetryPolicy(maximum_attempts=LOOKUP_ATTEMPTS),
            )
        except ActivityError as exc:
            return self._answer(request, Settled.UNCHECKED, _reason(exc), None)
        outcome = Settled.FOUND if lookup.found else Settled.NOT_FOUND
        return self._answer(request, outcome, lookup.checked, lookup.evidence)

    @staticmethod
    def _answer(
        request: ReconcileRequest, outcome: Settled, checked: str, evidence: dict[str, Any] | None
    ) -> Reconciliation:
        call = request.lookup
        return Reconciliation(
            workflow_id=call.workflow_id,
            call_id=call.call_id,
            tool=call.tool,
            outcome=outcome,
            checked=checked,
            evidence=evidence,
            checked_at=workflow.now(),
        )


def _reason(exc: ActivityError) -> str:
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        if cause.type in _TOOL_ERRORS:
            return cause.message
        # Any other exception's text may hold what a service said: its type only.
        return f"the lookup failed ({cause.type or 'an error'})"
    if isinstance(cause, FailureError) and cause.message:
        return f"the lookup did not finish: {cause.message}"
    return "the lookup did not finish"
