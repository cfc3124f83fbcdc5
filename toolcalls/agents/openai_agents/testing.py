"""An offline model for tests and demos: no API key, the same turns every time.

``ScriptedModel`` is an Agents SDK ``Model`` that asks for prepared tool calls, one per turn, and
then answers with the last tool output in its text. It keeps every input it was given
(``inputs``), so a test can assert what the model read. Give it to ``OpenAIAgentsPlugin`` through
``temporalio.openai_agents.testing.TestModelProvider``; it runs in the plugin's model activity,
like a real model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agents import Model, ModelResponse, Usage
from agents.items import TResponseStreamEvent
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

DEFAULT_ANSWER = "Done. The tool said: {output}"


class ScriptedModel(Model):
    """Asks for ``calls`` in order, one per turn, then answers ``answer`` (``{output}`` is the
    last tool output the model read). A call's arguments are a mapping, sent as JSON, or the
    text to send as they are.

    The turn is the number of tool outputs in the model's input, so the same conversation gets
    the same answer however often it is asked (a retried model activity, a restarted worker).
    Call ids are ``call_1``, ``call_2``, ... in the order of ``calls``: one conversation per
    agent workflow.
    """

    def __init__(
        self, calls: Sequence[tuple[str, Mapping[str, Any] | str]], answer: str = DEFAULT_ANSWER
    ) -> None:
        self.calls = list(calls)
        self.answer = answer
        self.inputs: list[list[dict[str, Any]]] = []
        """Every input the model was given, in order: the items it read on each turn."""
        self.tools: list[list[str]] = []
        """The names of the tools it was offered on each turn."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        """The next prepared call, or the answer once every call has its output."""
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append([dict(item) for item in items])
        self.tools.append([tool.name for tool in tools])
        outputs = [item for item in items if item.get("type") == "function_call_output"]
        turn = len(outputs)
        if turn < len(self.calls):
            name, arguments = self.calls[turn]
            return _response(
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{turn + 1}",
                    call_id=f"call_{turn + 1}",
                    name=name,
                    arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
                    status="completed",
                )
            )
        last = str(outputs[-1].get("output", "")) if outputs else ""
        text = ResponseOutputText(
            type="output_text", text=self.answer.format(output=last), annotations=[]
        )
        return _response(
            ResponseOutputMessage(
                type="message",
                id=f"msg_{turn + 1}",
                role="assistant",
                status="completed",
                content=[text],
            )
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        """Not scripted: the agent's workflow runs ``Runner.run``."""
        raise NotImplementedError("ScriptedModel answers get_response only")


def _response(output: Any) -> ModelResponse:
    return ModelResponse(output=[output], usage=Usage(), response_id=None)
