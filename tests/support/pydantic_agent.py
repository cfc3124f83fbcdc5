"""A pydantic-ai agent with the deployment's tools, in a workflow, as an application writes one.

Its model is scripted (``FunctionModel``): a test registers the turns for a prompt of its own in
``SCRIPTS``, starts ``ToolAgentWorkflow`` with that prompt, and reads what the model was sent at
every turn in ``SEEN`` (the model runs in an activity, in the test's process). Kept free of
test-only imports: the workflow runs in the sandbox like application code does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel
from pydantic_ai import (
    Agent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RunContext,
    UserPromptPart,
)
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalAgent, TemporalDurability
from pydantic_ai.exceptions import PydanticAIDeprecationWarning
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from temporalio import workflow

from toolcalls.agents.pydantic_ai import ToolCallsToolset
from toolcalls.workflows.reach.parent import ToolCalls

Turn = Callable[[list[ModelMessage]], ModelResponse]


@dataclass
class Seen:
    """What the model was sent at each turn of one prompt's run."""

    turns: list[list[ModelMessage]] = field(default_factory=list)
    tools: list[list[ToolDefinition]] = field(default_factory=list)


SCRIPTS: dict[str, list[Turn]] = {}
SEEN: dict[str, Seen] = {}


def _prompt(messages: list[ModelMessage]) -> str:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    raise AssertionError("no user prompt")


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The next turn of the prompt's script, after recording what the model was sent."""
    prompt = _prompt(messages)
    seen = SEEN.setdefault(prompt, Seen())
    seen.turns.append(list(messages))
    seen.tools.append(list(info.function_tools))
    step = sum(isinstance(message, ModelResponse) for message in messages)
    return SCRIPTS[prompt][step](messages)


class AgentDeps(BaseModel):
    task_queue: str
    """The deployment's task queue (each test has its own)."""
    inline: bool = False
    profile: str | None = None


def run_calls(ctx: RunContext[AgentDeps]) -> ToolCalls:
    """Each run's calls go to the deployment its test started."""
    deps = ctx.deps
    return ToolCalls(task_queue=deps.task_queue, inline=deps.inline, profile=deps.profile)


agent = Agent(
    FunctionModel(scripted, model_name="scripted"),
    name="toolcalls_test_agent",
    deps_type=AgentDeps,
    toolsets=[ToolCallsToolset(run_calls)],
    capabilities=[TemporalDurability()],
)


class AgentInput(BaseModel):
    prompt: str
    deps: AgentDeps


@workflow.defn
class ToolAgentWorkflow(PydanticAIWorkflow):
    """Runs the agent on one prompt and returns its final answer."""

    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, input: AgentInput) -> str:
        result = await agent.run(input.prompt, deps=input.deps)
        return result.output


with warnings.catch_warnings():
    # The wrapper pydantic-ai deprecated for TemporalDurability: the toolset works under it too.
    warnings.simplefilter("ignore", PydanticAIDeprecationWarning)
    wrapped_agent = TemporalAgent(
        Agent(
            FunctionModel(scripted, model_name="scripted"),
            name="toolcalls_test_wrapped_agent",
            deps_type=AgentDeps,
            toolsets=[ToolCallsToolset(run_calls)],
        )
    )


@workflow.defn
class WrappedAgentWorkflow(PydanticAIWorkflow):
    """``ToolAgentWorkflow`` with the agent wrapped in ``TemporalAgent``."""

    __pydantic_ai_agents__ = [wrapped_agent]

    @workflow.run
    async def run(self, input: AgentInput) -> str:
        result = await wrapped_agent.run(input.prompt, deps=input.deps)
        return result.output
