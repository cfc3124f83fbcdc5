"""Function tools for an OpenAI Agents SDK agent that run every call through ``ToolCalls``.

The tools are built in the agent's workflow, where the Agents SDK runner runs with Temporal's
``OpenAIAgentsPlugin``: the model's turns are activities, and each tool the model asks for is
invoked right there, in the workflow. The invocation hands the call to ``ToolCalls`` (a child
``ToolCallWorkflow``, or inline in the agent's workflow, as the ``ToolCalls`` says), so an approval
wait is a durable wait of the agent's workflow, and the model reads back ``model_reply``'s text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agents import FunctionTool, Tool
from agents.tool_context import ToolContext
from temporalio import workflow

from toolcalls.workflows.models.call import (
    CallStatus,
    ErrorCode,
    ToolCallRequest,
)
from toolcalls.workflows.models.definitions import (
    Definitions,
)
from toolcalls.workflows.models.inline import inline_workflow_id
from toolcalls.workflows.models.reply import model_reply
from toolcalls.workflows.reach.parent import ToolCalls
from toolcalls.workflows.reach.parent_parts import local_result

DEFINITION_FORMAT = "openai"
"""The shape asked of the deployment: strict function tools, the Responses API's own."""
SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")
"""Where a definition keeps its arguments' schema: ``openai``, ``anthropic``, ``mcp`` shapes."""

JSON_KINDS: dict[type, str] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}
"""What a model sent instead of an object, in JSON's words."""

Definition = Mapping[str, Any]


async def function_tools(
    calls: ToolCalls, definitions: Definitions | Iterable[Definition] | None = None
) -> list[Tool]:
    """The profile's tools as ``FunctionTool``s whose calls run through ``calls`` (typed as the
    SDK's ``Tool``, what ``Agent(tools=...)`` takes).

    Without ``definitions`` they come from the deployment (``calls.definitions``: one activity on
    its task queue, for ``calls``' profile, or every enabled tool), recorded in the workflow's
    history like the model's turns. Given ``definitions`` (a ``Definitions``, or definitions in the
    ``openai``, ``anthropic`` or ``mcp`` shape, as ``ToolCallClient.definitions`` and
    ``toolcalls tools --format`` give them), nothing is asked.

    Raises:
        ValueError: a definition has no name or no schema.
    """
    if definitions is None:
        definitions = await calls.definitions(DEFINITION_FORMAT)
    if isinstance(definitions, Definitions):
        definitions = definitions.definitions
    return [function_tool(calls, definition) for definition in definitions]


def function_tool(calls: ToolCalls, definition: Definition) -> FunctionTool:
    """One tool, from its model-facing definition, whose calls run through ``calls``."""
    name = definition.get("name")
    schema = next((definition[key] for key in SCHEMA_KEYS if key in definition), None)
    if not isinstance(name, str) or not name or not isinstance(schema, Mapping):
        raise ValueError(
            f"tool definition {str(name)[:64]!r}: needs a name and one of {', '.join(SCHEMA_KEYS)}"
        )

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        return await run_call(calls, name, arguments, context.tool_call_id)

    return FunctionTool(
        name=name,
        description=str(definition.get("description", "")),
        params_json_schema=dict(schema),
        on_invoke_tool=invoke,
        strict_json_schema=bool(definition.get("strict", True)),
    )


async def run_call(calls: ToolCalls, tool: str, arguments: str, call_id: str) -> str:
    """Run the model's call of ``tool`` (its JSON ``arguments``) and return what the model reads.

    The model's tool-call id is the call's id, so the call is ``"{workflow id}/tools/{call_id}"``
    and a replayed or retried workflow never runs it twice.
    """
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        return _unreadable(tool, call_id, f"{tool}: the arguments are not JSON: {exc}")
    if not isinstance(parsed, dict):
        kind = JSON_KINDS.get(type(parsed), "a value")
        return _unreadable(
            tool, call_id, f"{tool}: the arguments must be a JSON object, not {kind}"
        )
    result = await calls.call(tool, parsed, call_id=call_id or None)
    return model_reply(result).text


def _unreadable(tool: str, call_id: str, message: str) -> str:
    """What the model reads of a call whose arguments are not a JSON object: nothing started."""
    request = ToolCallRequest(tool=tool, call_id=call_id)
    call = inline_workflow_id(workflow.info().workflow_id, call_id)
    result = local_result(request, call, CallStatus.FAILED, ErrorCode.INVALID_ARGUMENTS, message)
    return model_reply(result).text
