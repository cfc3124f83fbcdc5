"""The deployment's tools as a pydantic-ai toolset, each call a durable ``ToolCalls`` call.

    agent = Agent(model, name="helper", toolsets=[ToolCallsToolset(task_queue="toolcalls")],
                  capabilities=[TemporalDurability()])

``ToolCallsToolset`` offers a profile's tools (or every enabled one) with the deployment's strict
JSON schemas, and runs every call the model makes through ``ToolCalls`` from the agent's own
workflow: a child ``ToolCallWorkflow``, or inline (``inline=True``). A call that needs an approval
is a durable wait of that workflow, decided in the inbox, with ``toolcalls approve`` or through
``ToolCallClient``; pydantic-ai's own deferred tools are not involved.

It runs in the workflow, not in an activity. pydantic-ai's Temporal integration
(``TemporalDurability``, or the older ``TemporalAgent``) moves the I/O of the toolsets it knows
(``FunctionToolset``, ``DynamicToolset``, ``MCPToolset``) into activities and leaves any other
toolset in the workflow; this one is none of those, and it does no I/O of its own: ``ToolCalls``
starts child workflows and activities, which only workflow code may do.

The definitions come from the deployment, once per agent run: the ``toolcalls.definitions``
activity on the deployment's task queue (``ToolCalls.definitions``), recorded in the run's
history, so the agent's worker needs no tool configuration and a replay sees what the model saw.

``agent_worker(client, task_queue=..., workflows=[...])`` runs the agent's workflows on a worker
with ``PydanticAIPlugin``; ``scripted_model(...)`` is an offline model for demos and tests.

What the model reads is ``toolcalls.workflows.models.reply.model_reply`` of each result:

- ``completed``, and an approver's answer in place of the tool (``responded``): the reply's
  text, returned as the tool's result;
- ``failed`` with ``fixable_args``: ``ModelRetry`` with the reply's text, so pydantic-ai asks the
  model to call again with those arguments fixed (counted against the tool's ``max_retries``;
  once they are used up, as below);
- anything else (denied, failed, timed out, canceled, uncertain): ``ToolFailed`` with the reply's
  text, a failed tool result the model reads (the provider's error channel, where it has one),
  and the run goes on.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

try:
    from pydantic_ai import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        ModelRetry,
        RetryPromptPart,
        RunContext,
        TextPart,
        ToolCallPart,
        ToolDefinition,
        ToolReturnPart,
    )
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from pydantic_ai.exceptions import ToolFailed, UserError
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise ImportError(
        f"toolcalls.agents.pydantic_ai needs pydantic-ai ({exc.name} is missing): "
        "pip install 'toolcalls[pydantic-ai]'"
    ) from exc
from pydantic_core import SchemaValidator, core_schema
from temporalio import workflow
from temporalio.client import Client
from temporalio.exceptions import ActivityError

from toolcalls.agents._worker import AgentWorker, serve_agents
from toolcalls.workflows.models.call import (
    DEFAULT_APPROVAL_TIMEOUT,
    DEFAULT_TASK_QUEUE,
    CapabilityPolicy,
)
from toolcalls.workflows.models.definitions import (
    Definitions,
)
from toolcalls.workflows.models.reply import model_reply
from toolcalls.workflows.reach.parent import CallBudget, ToolCalls

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFINITIONS_FORMAT",
    "AgentWorker",
    "ToolCallsToolset",
    "agent_worker",
    "scripted_model",
]

DEFAULT_MAX_RETRIES = 2
"""Times the model may call a tool again with fixed arguments after a fixable failure."""
DEFINITIONS_FORMAT = "openai"
"""The deployment's definitions in the shape that carries ``strict`` (the schema is the same)."""
_ANY_ARGUMENTS = SchemaValidator(core_schema.dict_schema())
"""The deployment's plan validates arguments (and names the ones to fix); pydantic-ai only
checks that they are a JSON object."""


@dataclass(frozen=True)
class _Settings:
    """How a run's calls are made, when every run makes them the same way."""

    task_queue: str = DEFAULT_TASK_QUEUE
    profile: str | None = None
    inline: bool = False
    policy: CapabilityPolicy | None = None
    approval_timeout: timedelta | None = DEFAULT_APPROVAL_TIMEOUT
    budget: CallBudget | None = None

    def calls(self, ctx: RunContext[Any]) -> ToolCalls:
        """A fresh ``ToolCalls`` for one run."""
        return ToolCalls(
            task_queue=self.task_queue,
            policy=self.policy,
            approval_timeout=self.approval_timeout,
            budget=self.budget,
            profile=self.profile,
            inline=self.inline,
        )


class ToolCallsToolset(AbstractToolset[Any]):
    """A deployment's tools for a pydantic-ai agent running in a Temporal workflow."""

    def __init__(
        self,
        calls: Callable[[RunContext[Any]], ToolCalls] | None = None,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        profile: str | None = None,
        inline: bool = False,
        policy: CapabilityPolicy | None = None,
        approval_timeout: timedelta | None = DEFAULT_APPROVAL_TIMEOUT,
        budget: CallBudget | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        id: str = "toolcalls",
    ) -> None:
        """Say which tools, and how every call is made.

        Args:
            calls: makes each run's ``ToolCalls`` from the run's context (settings that vary per
                run, read from ``ctx.deps``), instead of the settings below.
            task_queue: the deployment's task queue (where ``ToolCallWorkflow`` runs).
            profile: the deployment profile whose tools the model gets (``[profiles.NAME]``);
                every enabled tool without one.
            inline: run calls inside the agent's workflow rather than as child workflows.
            policy, approval_timeout, budget: as for ``ToolCalls``; the budget is per agent run.
            max_retries: how often the model may call again after a fixable failure.
            id: the toolset's id, unique among the agent's toolsets.
        """
        settings = _Settings(task_queue, profile, inline, policy, approval_timeout, budget)
        if calls is not None and settings != _Settings():
            raise TypeError("ToolCallsToolset: give either calls or its settings, not both")
        self.settings = settings
        self._make_calls = calls or settings.calls
        self.max_retries = max_retries
        self._id = id
        self._calls: ToolCalls | None = None
        self._tools: dict[str, ToolsetTool[Any]] | None = None

    @property
    def id(self) -> str:
        return self._id

    @property
    def calls(self) -> ToolCalls:
        """This run's ``ToolCalls`` (its ``usage`` is what the run's calls used)."""
        if self._calls is None:
            raise UserError(
                f"toolset {self._id!r}: its tools are for an agent run inside a Temporal workflow "
                "(the calls are child workflows or inline calls of that workflow)"
            )
        return self._calls

    async def for_run(self, ctx: RunContext[Any]) -> ToolCallsToolset:
        """A copy for one agent run: its own ``ToolCalls`` (budget, call ids) and definitions."""
        if not workflow.in_workflow():
            return self
        run = copy.copy(self)
        run._calls = self._make_calls(ctx)
        return run

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        if self._tools is None:
            calls = self.calls
            try:
                definitions = await calls.definitions(format=DEFINITIONS_FORMAT)
            except ActivityError as err:
                # A UserError fails the agent's workflow (PydanticAIPlugin lists it), with why.
                raise UserError(
                    f"toolset {self._id!r}: no tool definitions from the deployment on task "
                    f"queue {calls.task_queue!r}: {err.cause}"
                ) from err
            self._tools = self._toolset_tools(definitions)
        return self._tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> str:
        result = await self.calls.call(name, tool_args, call_id=ctx.tool_call_id)
        reply = model_reply(result)
        if not reply.is_error:
            return reply.text
        if reply.retry and ctx.retry < tool.max_retries:
            raise ModelRetry(reply.text)
        raise ToolFailed(reply.text)

    def _toolset_tools(self, definitions: Definitions) -> dict[str, ToolsetTool[Any]]:
        tools: dict[str, ToolsetTool[Any]] = {}
        for item in definitions.definitions:
            tool_def = ToolDefinition(
                name=item["name"],
                description=item.get("description"),
                parameters_json_schema=item["parameters"],
                strict=item.get("strict"),
            )
            tools[tool_def.name] = ToolsetTool(
                toolset=self,
                tool_def=tool_def,
                max_retries=self.max_retries,
                args_validator=_ANY_ARGUMENTS,
            )
        return tools


@asynccontextmanager
async def agent_worker(
    client: Client, *, task_queue: str, workflows: Sequence[type], **options: Any
) -> AsyncIterator[AgentWorker]:
    """A worker for the agents' workflows (``PydanticAIWorkflow`` subclasses) on ``task_queue``,
    with ``PydanticAIPlugin`` on a client of ``client``'s connection, until the block ends.

    ``client`` keeps its converter (``toolcalls.data_converter()``: the deployment's codec and
    payload store), which the plugin gives its pydantic payload converter; ``options`` are
    ``Worker``'s. Start the workflows with what it yields (``execute``, ``start``, ``client``).
    """
    async with serve_agents(
        client,
        task_queue=task_queue,
        workflows=workflows,
        plugins=[PydanticAIPlugin()],
        **options,
    ) as worker:
        yield worker


DEFAULT_ANSWER = "{output}"


def scripted_model(
    *calls: tuple[str, Mapping[str, Any]], answer: str = DEFAULT_ANSWER
) -> FunctionModel:
    """An offline model (pydantic-ai's ``FunctionModel``): it asks for ``calls`` in order, one
    per turn, then answers ``answer``, where ``{output}`` is the last tool result it read.

    The turn is the number of tool results in the conversation, so a retried model request
    asks the same; the call ids are ``call_1``, ``call_2``, ... in the order of ``calls``.
    """

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        results = [
            part
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart | RetryPromptPart)
        ]
        if len(results) < len(calls):
            name, arguments = calls[len(results)]
            call = ToolCallPart(name, dict(arguments), tool_call_id=f"call_{len(results) + 1}")
            return ModelResponse(parts=[call])
        last = results[-1] if results else None
        output = (
            last.model_response_str()
            if isinstance(last, ToolReturnPart)
            else last.model_response()
            if last is not None
            else ""
        )
        return ModelResponse(parts=[TextPart(answer.format(output=output))])

    return FunctionModel(respond)
