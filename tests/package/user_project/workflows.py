"""The application's parent workflow: a call a human approves (a child ``ToolCallWorkflow``), a
call inside the parent (``inline=True``), then the application's own activity.

The facade is imported at module level, in the sandbox, with no ``imports_passed_through``.
"""

from datetime import timedelta

from temporalio import workflow

from activities import summarize
from toolcalls import CapabilityPolicy, ToolCallRequest, ToolCalls

NEEDS_APPROVAL = CapabilityPolicy(tools={"calculator": "require_approval"})


@workflow.defn
class MyParent:
    @workflow.run
    async def run(self, note: str) -> str:
        tools = ToolCalls(task_queue=workflow.info().task_queue)
        product = await tools.call(
            ToolCallRequest(
                tool="calculator",
                arguments={"expression": "6 * 7"},
                call_id="product",
                policy=NEEDS_APPROVAL,
            )
        )
        read = await tools.call("read_file", {"path": note}, call_id="note", inline=True)
        content = (read.output or {}).get("content", "")
        return await workflow.execute_activity(
            summarize,
            [
                f"{product.status} {(product.output or {}).get('result')}",
                f"{read.status} {content.strip()}",
                f"sandboxed {workflow.unsafe.in_sandbox()}",
            ],
            start_to_close_timeout=timedelta(seconds=10),
        )
