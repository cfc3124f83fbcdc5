"""The baseline of ``bench.overhead``: a bare workflow that runs one tool activity directly.

No plan, no policy, no search attributes (unless asked for the one), no event log: the workflow
runs the activity with the options it is given (the catalog's options for the tool) and returns
the activity's result. It lives in its own module that imports only what a minimal workflow
would, so the sandbox re-imports as little for it as for a user's own small workflow. Its inputs
are a plain dict and a model from a pass-through module. The SDK gives every workflow run a
payload converter of its own, so each run builds its type adapters again, as
``ToolCallWorkflow``'s runs do; the ones for ``dict[str, Any]`` and ``dict`` cost more to build
than a model's (about 150 and 60 µs against 15-20), about 0.2 ms per call that
``ToolCallWorkflow``, whose inputs and results are models, does not pay.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

from toolcalls.workflows.models.call import SEARCH_STATUS, ActivityPlan

BARE_WORKFLOW = "BenchBareToolWorkflow"
BARE_ACTIVITY = "bench.calculator"


@workflow.defn(name=BARE_WORKFLOW)
class BareToolWorkflow:
    """Runs ``bench.calculator`` once, locally or as a regular activity; returns its result.
    With ``publish``, it also sets one search attribute when it ends (``ToolCallStatus``), as
    ``ToolCallWorkflow`` does: the floor for a call that must be found by its status."""

    @workflow.run
    async def run(
        self, arguments: dict[str, Any], options: ActivityPlan, publish: bool = False
    ) -> dict[str, Any]:
        retry = RetryPolicy(maximum_attempts=options.maximum_attempts)
        result: dict[str, Any]
        if options.local:
            result = await workflow.execute_local_activity(
                BARE_ACTIVITY,
                arguments,
                result_type=dict,
                start_to_close_timeout=options.start_to_close,
                retry_policy=retry,
            )
        else:
            result = await workflow.execute_activity(
                BARE_ACTIVITY,
                arguments,
                result_type=dict,
                task_queue=options.task_queue,
                start_to_close_timeout=options.start_to_close,
                schedule_to_start_timeout=options.schedule_to_start,
                heartbeat_timeout=options.heartbeat,
                retry_policy=retry,
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
        if publish:
            workflow.upsert_search_attributes([SEARCH_STATUS.value_set("completed")])
        return result
