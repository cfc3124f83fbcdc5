"""An application's own workflow and activity, served by the same worker as the tool calls.

Kept free of test-only imports: it runs in the workflow sandbox like application code does.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

from toolcalls.workflows.models.call import ToolCallRequest
from toolcalls.workflows.reach.parent import ToolCalls


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class UserApp:
    """Runs its own activity, then a tool call on the queue it runs on."""

    @workflow.run
    async def run(self, text: str) -> str:
        loud = await workflow.execute_activity(
            shout, text, start_to_close_timeout=timedelta(seconds=10)
        )
        tools = ToolCalls(task_queue=workflow.info().task_queue)
        result = await tools.call(
            ToolCallRequest(tool="calculator", arguments={"expression": "6 * 7"}, call_id="c1")
        )
        return f"{loud} {result.status} {result.output}"
