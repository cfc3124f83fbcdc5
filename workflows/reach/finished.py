"""Listing the calls that have ended, for an application's or the inbox's history
(``ToolCallClient.finished``)."""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio.client import Client

from toolcalls.workflows.models.call import SEARCH_TOOL, WORKFLOW_NAME
from toolcalls.workflows.models.views import FinishedCall

FINISHED_QUERY = f'WorkflowType = "{WORKFLOW_NAME}" AND ExecutionStatus = "Completed"'
"""A call's workflow completes whatever became of the call; one that did not (terminated, say)
has no result to show."""
_NEVER = datetime.min.replace(tzinfo=UTC)


async def list_finished(client: Client, *, limit: int) -> list[FinishedCall]:
    """The ``limit`` calls closed last, the most recent first."""
    found = [
        FinishedCall(
            workflow_id=execution.id,
            run_id=execution.run_id,
            tool=execution.typed_search_attributes.get(SEARCH_TOOL) or "",
            closed_at=execution.close_time,
        )
        async for execution in client.list_workflows(FINISHED_QUERY, limit=limit)
    ]
    return sorted(found, key=lambda call: call.closed_at or _NEVER, reverse=True)
