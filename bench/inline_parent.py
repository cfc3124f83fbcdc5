"""The parent workflow of ``bench.inline``: one calculator call, inline, as a child, or bare.

As an application's agent workflow would make it: through ``ToolCalls`` (inline or as a child
``ToolCallWorkflow``), or, as the baseline, by running the calculator code as a plain activity
itself with the catalog's options for the tool. Every mode imports the same modules, so the
sandbox costs them the same.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from bench.baseline import BARE_ACTIVITY
from toolcalls.workflows.models.call import ActivityPlan, CallStatus, CapabilityPolicy, Effect
from toolcalls.workflows.reach.parent import ToolCalls

BENCH_PARENT = "BenchAgentParent"
ALLOW = CapabilityPolicy(default_effect=Effect.ALLOW, tools={"calculator": Effect.ALLOW})


class BenchCall(BaseModel):
    mode: str
    """``inline``, ``child`` or ``bare``."""
    deployment: str
    """The toolcalls deployment's task queue."""
    tool: str
    arguments: dict[str, Any]
    options: ActivityPlan
    """The bare activity's options (the catalog's for the tool) and task queue."""


@workflow.defn(name=BENCH_PARENT)
class BenchAgentParent:
    """Makes one call and returns the tool's output."""

    @workflow.run
    async def run(self, call: BenchCall) -> dict[str, Any]:
        if call.mode == "bare":
            options = call.options
            output: dict[str, Any] = await workflow.execute_activity(
                BARE_ACTIVITY,
                call.arguments,
                result_type=dict,
                task_queue=options.task_queue,
                start_to_close_timeout=options.start_to_close,
                schedule_to_start_timeout=options.schedule_to_start,
                retry_policy=RetryPolicy(maximum_attempts=options.maximum_attempts),
            )
            return output
        tools = ToolCalls(task_queue=call.deployment, policy=ALLOW, inline=call.mode == "inline")
        result = await tools.call(call.tool, call.arguments, call_id="call")
        if result.status is not CallStatus.COMPLETED:
            message = f"{call.mode}: the call ended {result.status}: {result.error}"
            raise ApplicationError(message, non_retryable=True)
        assert isinstance(result.output, dict)
        return result.output
