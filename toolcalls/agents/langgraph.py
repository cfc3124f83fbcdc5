"""LangGraph: the deployment's tools for a graph run through ``temporalio.langgraph``.

Three entry points, used where a LangGraph worker is built (outside the workflow) and in the
agent's workflow:

- ``langchain_tools(definitions)``: a profile's tools as LangChain tools, with the profile's
  strict JSON schemas as their ``args_schema``. The definitions come from the deployment
  (``ToolCallClient.definitions`` at worker start), so the model and the deployment agree on them.
- ``agent_graph(model, tools)``: the usual agent graph, a model node (an activity: it does I/O)
  and a tool node (``ToolsNode``: a ``langgraph.prebuilt.ToolNode`` run in the workflow),
  ready for ``LangGraphPlugin(graphs={...})``.
- ``toolcalls_config(tool_calls)``: the graph's config carrying the workflow's ``ToolCalls``,
  through which every tool call runs (a child ``ToolCallWorkflow``, or inline);
- ``agent_worker(client, task_queue=..., workflows=[...], graphs={...})``: the agent's worker,
  with ``LangGraphPlugin`` for the graphs; ``ScriptedChatModel``, an offline model.

A tool's message is ``model_reply``'s text (``toolcalls.workflows.models.reply``); it has status
``"error"`` for every outcome but ``completed``. The model's tool-call id is the call id, so a
replayed or retried graph never runs a call twice.

.. warning:: experimental, as ``temporalio.langgraph`` is.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

try:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.runnables import Runnable, RunnableConfig
    from langchain_core.runnables.config import merge_configs
    from langchain_core.tools import BaseTool, ToolException
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from temporalio.langgraph import LangGraphPlugin
except ImportError as err:  # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "toolcalls.agents.langgraph needs LangGraph: pip install 'toolcalls[langgraph]'"
    ) from err

from temporalio.client import Client

from toolcalls.agents._worker import AgentWorker, serve_agents
from toolcalls.workflows.models.call import (
    ToolCallResult,
)
from toolcalls.workflows.models.definitions import (
    Definitions,
)
from toolcalls.workflows.models.reply import model_reply
from toolcalls.workflows.reach.parent import ToolCalls

CONFIG_KEY = "toolcalls"
"""The ``configurable`` key that carries the workflow's ``ToolCalls`` to the tools."""
MODEL_NODE = "agent"
TOOL_NODE = "tools"
MODEL_ACTIVITY_OPTIONS: dict[str, Any] = {"start_to_close_timeout": timedelta(minutes=5)}
"""The model node's activity options unless ``agent_graph`` is given others."""
SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")
"""Where each definition format (``openai``, ``anthropic``, ``mcp``) keeps the schema."""

_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "toolcalls_langgraph_call_id", default=None
)
"""The model's tool-call id of the call being run: ``ainvoke`` sees it, ``_arun`` does not."""


class MissingToolCalls(RuntimeError):
    """A tool ran without a ``ToolCalls`` in the graph's config."""


class ToolCallsTool(BaseTool):
    """One of the deployment's tools; calling it runs the call through the workflow's
    ``ToolCalls``. Only asynchronously, and only inside a workflow."""

    args_schema: dict[str, Any]
    handle_tool_error: bool = True
    """A call that did not complete is a tool message with status ``"error"``, not an exception."""
    inline: bool | None = None
    """Run this tool's calls inline (``True``), as children (``False``), or as the ``ToolCalls``
    in the config chooses (``None``)."""

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the call; a model's tool call (``{"type": "tool_call", "id": ...}``) gives its id."""
        tool_call = isinstance(input, dict) and input.get("type") == "tool_call"
        # Set on every call (no reset: a workflow evicted mid-call closes this coroutine in
        # another context), so an id never outlives the invocation that brought it.
        _call_id.set(input.get("id") if tool_call else None)
        return await super().ainvoke(input, config, **kwargs)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{self.name}: runs only asynchronously, from a workflow (ainvoke)"
        )

    async def _arun(self, config: RunnableConfig, **arguments: Any) -> str:
        calls = (config.get("configurable") or {}).get(CONFIG_KEY)
        if calls is None:
            raise MissingToolCalls(
                f"{self.name}: no ToolCalls in the graph's config; invoke the graph with "
                "config=toolcalls_config(ToolCalls(...))"
            )
        result = await calls.call(self.name, arguments, call_id=_call_id.get(), inline=self.inline)
        if type(result) is not ToolCallResult:
            # A sandbox that re-imports our models made its own classes; ours compare by identity.
            result = ToolCallResult.model_validate(result.model_dump(mode="json"))
        reply = model_reply(result)
        if reply.is_error:
            raise ToolException(reply.text)
        return reply.text


def langchain_tools(
    definitions: Definitions | Iterable[Mapping[str, Any]], *, inline: bool | None = None
) -> list[ToolCallsTool]:
    """The tools of ``definitions`` (``ToolCallClient.definitions``, any format) as LangChain
    tools whose calls run through the workflow's ``ToolCalls``."""
    items = definitions.definitions if isinstance(definitions, Definitions) else definitions
    return [
        ToolCallsTool(
            name=item["name"],
            description=item.get("description", ""),
            args_schema=dict(_schema(item)),
            inline=inline,
        )
        for item in items
    ]


class ToolsNode:
    """Runs the model's tool calls: a ``ToolNode`` of the tools, asynchronously, in the workflow.

    Given to a graph as ``ToolsNode(tools).run``. ``ToolNode`` itself cannot be the node:
    ``LangGraphPlugin`` runs a node's synchronous function when it has one (``ToolNode``'s runs
    tools on threads, which a workflow must not), and a ``ToolNode`` whose function the plugin
    wrapped refers back to itself, which sends LangGraph's search for subgraphs round in a loop
    when the graph compiles."""

    def __init__(self, tools: Sequence[BaseTool]) -> None:
        self.node = ToolNode(tools)

    async def run(self, state: MessagesState, config: RunnableConfig) -> Any:
        """The tool messages of the last AI message's tool calls."""
        return await self.node.ainvoke(state, config)


class ModelNode:
    """The model's turn: the messages so far in, the model's reply out."""

    def __init__(self, model: Runnable[Any, Any]) -> None:
        self.model = model

    # The plugin names a node's task after its function, so the node is a method, not a closure.
    async def run(self, state: MessagesState) -> dict[str, Any]:
        """Ask the model; messages reach the activity as the data converter decoded them."""
        reply = await self.model.ainvoke(convert_to_messages(state["messages"]))
        return {"messages": [reply]}


def agent_graph(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    model_activity: Mapping[str, Any] | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """A model node (an activity, with ``model_activity`` options) and a tool node (in the
    workflow), looping until the model answers without a tool call.

    A fresh graph each time: ``LangGraphPlugin`` takes its graphs' nodes over."""
    agent = ModelNode(model.bind_tools(tools)).run
    options = dict(MODEL_ACTIVITY_OPTIONS if model_activity is None else model_activity)
    builder = StateGraph(MessagesState)
    builder.add_node(MODEL_NODE, agent, metadata={"execute_in": "activity", **options})
    builder.add_node(TOOL_NODE, ToolsNode(tools).run, metadata={"execute_in": "workflow"})
    builder.add_edge(START, MODEL_NODE)
    builder.add_conditional_edges(MODEL_NODE, route, [TOOL_NODE, END])
    builder.add_edge(TOOL_NODE, MODEL_NODE)
    return builder


async def route(state: MessagesState) -> str:
    """To the tool node while the model asks for tools, else to the end.

    Asynchronous: LangGraph runs a synchronous router (``tools_condition`` itself) on a thread,
    which a workflow must not."""
    return tools_condition(dict(state))


def toolcalls_config(tool_calls: ToolCalls, config: RunnableConfig | None = None) -> RunnableConfig:
    """``config`` (or a new one) carrying ``tool_calls`` to the graph's tools."""
    return merge_configs(config, {"configurable": {CONFIG_KEY: tool_calls}})


def _schema(item: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in SCHEMA_KEYS:
        if key in item:
            schema: Mapping[str, Any] = item[key]
            return schema
    raise ValueError(f"{item.get('name')}: definition has no schema ({', '.join(SCHEMA_KEYS)})")


@asynccontextmanager
async def agent_worker(
    client: Client,
    *,
    task_queue: str,
    workflows: Sequence[type],
    graphs: Mapping[str, StateGraph[Any, Any, Any, Any]],
    **options: Any,
) -> AsyncIterator[AgentWorker]:
    """A worker for the agents' workflows on ``task_queue``, with ``LangGraphPlugin`` for
    ``graphs`` (``graph(NAME)`` in a workflow), on a client of ``client``'s connection, until the
    block ends. ``options`` are ``Worker``'s."""
    async with serve_agents(
        client,
        task_queue=task_queue,
        workflows=workflows,
        plugins=[LangGraphPlugin(graphs=dict(graphs))],
        **options,
    ) as worker:
        yield worker


class ScriptedChatModel(BaseChatModel):
    """An offline chat model: it asks for ``calls`` (``(tool, arguments)``) in order, one per
    turn, then answers ``answer``, where ``{output}`` is the last tool message it read. The
    turn is the number of tool messages so far; call ids are ``call_1``, ``call_2``, ..."""

    calls: list[tuple[str, dict[str, Any]]]
    answer: str = "{output}"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        results = [message for message in messages if isinstance(message, ToolMessage)]
        if len(results) < len(self.calls):
            name, arguments = self.calls[len(results)]
            call = {"name": name, "args": arguments, "id": f"call_{len(results) + 1}"}
            reply = AIMessage(content="", tool_calls=[call])
        else:
            output = str(results[-1].content) if results else ""
            reply = AIMessage(content=self.answer.format(output=output))
        return ChatResult(generations=[ChatGeneration(message=reply)])


__all__ = [
    "CONFIG_KEY",
    "AgentWorker",
    "MissingToolCalls",
    "ScriptedChatModel",
    "ToolCallsTool",
    "ToolsNode",
    "agent_graph",
    "agent_worker",
    "langchain_tools",
    "toolcalls_config",
]
