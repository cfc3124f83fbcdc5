"""A LangGraph agent, as an application would write one, and a scripted chat model for it.

The workflow runs in the sandbox like application code does; the model runs in the model node's
activity, in the test's process, so the test reads what it was shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel
from temporalio import workflow
from temporalio.langgraph import graph

from toolcalls.agents.langgraph import toolcalls_config
from toolcalls.workflows.models.call import CapabilityPolicy
from toolcalls.workflows.reach.parent import ToolCalls

GRAPH = "agent"

Script = Callable[[list[BaseMessage]], AIMessage]
"""The model's next message, given the messages it is shown."""


class ScriptedChatModel(BaseChatModel):
    """An offline chat model: ``script`` answers; every prompt is kept in ``seen``."""

    script: Any
    seen: list[list[BaseMessage]] = []
    bound: list[str] = []
    """The names of the tools it was bound to."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.bound = [tool.name for tool in tools]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        script: Script = self.script
        return ChatResult(generations=[ChatGeneration(message=script(messages))])


def asks(name: str, arguments: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": arguments, "id": call_id}])


class AgentInput(BaseModel):
    question: str
    task_queue: str
    """The deployment's."""
    policy: CapabilityPolicy | None = None
    inline: bool = False


class AgentOutput(BaseModel):
    answer: str
    messages: list[dict[str, Any]]


@workflow.defn
class LangGraphAgent:
    """Runs the registered graph on one question, its tool calls through ``ToolCalls``."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentOutput:
        calls = ToolCalls(task_queue=input.task_queue, policy=input.policy, inline=input.inline)
        app = graph(GRAPH).compile()
        state = await app.ainvoke(
            {"messages": [HumanMessage(input.question)]}, config=toolcalls_config(calls)
        )
        messages = state["messages"]
        return AgentOutput(
            answer=str(messages[-1].content), messages=[m.model_dump() for m in messages]
        )
