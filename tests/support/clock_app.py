"""An application's workflow that reads the wall clock, which the workflow sandbox forbids.

Kept free of test-only imports: it runs in the workflow sandbox like application code does.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow


@workflow.defn(failure_exception_types=[workflow.NondeterminismError])
class ReadsTheClock:
    """Its run fails, and the failure is the workflow's, so a test needs no retrying task to see
    it. ``run`` takes an argument: type-checked beside a workflow whose ``run`` takes none, mypy
    rejected ``get_workflow_handle_for(ToolCallWorkflow.run, ...)`` in other test modules."""

    @workflow.run
    async def run(self, label: str) -> str:
        return f"{label} {datetime.now().isoformat()}"
