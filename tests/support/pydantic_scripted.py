"""A pydantic-ai agent on ``scripted_model``, as an application writes one: it asks for the
calculator, then answers with what the tool said. Free of test-only imports: its workflow runs
in the sandbox like application code does."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from temporalio import workflow

from toolcalls.agents.pydantic_ai import ToolCallsToolset, scripted_model
from toolcalls.workflows.reach.parent import ToolCalls

calculator_agent = Agent(
    scripted_model(("calculator", {"expression": "6 * 7"}), answer="the tool said: {output}"),
    name="calculator_agent",
    deps_type=str,  # the deployment's task queue
    toolsets=[ToolCallsToolset(lambda ctx: ToolCalls(task_queue=ctx.deps))],
    capabilities=[TemporalDurability()],
)


@workflow.defn
class CalculatorAgent(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [calculator_agent]

    @workflow.run
    async def run(self, prompt: str, deployment_queue: str) -> str:
        return (await calculator_agent.run(prompt, deps=deployment_queue)).output
