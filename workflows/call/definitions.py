"""``ToolDefinitions``: a profile's model-facing definitions, for an application.

A parent workflow asks the deployment with an activity (``ToolCalls.definitions``); an
application has no activity to call, so ``ToolCallClient.definitions`` runs this short workflow
on the deployment's task queue, which asks the same activity locally. The answer comes from the
deployment's own configuration, as the plan of every call does.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from toolcalls.workflows.models.call import (
    DEFINITIONS_ACTIVITY,
    DEFINITIONS_WORKFLOW,
)
from toolcalls.workflows.models.definitions import (
    Definitions,
    DefinitionsRequest,
)

DEFINITIONS_TIMEOUT = timedelta(seconds=10)


@workflow.defn(name=DEFINITIONS_WORKFLOW)
class DefinitionsWorkflow:
    """Returns the deployment's definitions of a profile (or of every enabled tool)."""

    @workflow.run
    async def run(self, request: DefinitionsRequest) -> Definitions:
        result: Definitions = await workflow.execute_local_activity(
            DEFINITIONS_ACTIVITY,
            request,
            result_type=Definitions,
            start_to_close_timeout=DEFINITIONS_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return result
