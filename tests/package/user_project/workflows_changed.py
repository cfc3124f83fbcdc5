"""``MyParent`` changed without ``workflow.patched``: it reads the note before the approved call,
so histories of the old order no longer replay."""

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
        read = await tools.call("read_file", {"path": note}, call_id="note", inline=True)
        product = await tools.call(
            ToolCallRequest(
                tool="calculator",
                arguments={"expression": "6 * 7"},
                call_id="product",
                policy=NEEDS_APPROVAL,
            )
        )
        return await workflow.execute_activity(
            summarize,
            [str(product.status), str(read.status)],
            start_to_close_timeout=timedelta(seconds=10),
        )
