"""An OpenAI Agents SDK agent as an application would write one, with the deployment's tools.

Kept free of test-only imports: it runs in the workflow sandbox like application code does.
"""

from __future__ import annotations

from agents import Agent, Runner
from pydantic import BaseModel
from temporalio import workflow

from toolcalls.agents.openai_agents import function_tools
from toolcalls.workflows.reach.parent import ToolCalls


class AgentInput(BaseModel):
    prompt: str
    task_queue: str
    """The deployment's task queue."""
    profile: str | None = None
    inline: bool = False


@workflow.defn
class ToolAgent:
    """One agent run: the model's turns are the plugin's activities, its tools our calls."""

    @workflow.run
    async def run(self, input: AgentInput) -> str:
        calls = ToolCalls(task_queue=input.task_queue, profile=input.profile, inline=input.inline)
        agent = Agent(
            name="Assistant",
            instructions="Use the tools to answer.",
            tools=await function_tools(calls),
        )
        result = await Runner.run(agent, input.prompt)
        return str(result.final_output)
