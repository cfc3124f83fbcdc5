"""A LangGraph agent on Temporal whose tool calls are the deployment's, durable and approved.

Run it from the repository's root against `make run` (which serves examples/toolcalls.toml):

    python examples/agents/langgraph.py                    # prints `toolcalls approve ...`, waits
    python examples/agents/langgraph.py --approve-as demo  # approves its own call

It starts a worker for the agent's workflow on a queue of its own (`agent_worker`, with
`LangGraphPlugin`), and asks the agent to write a file under /tmp/toolcalls-scratch (`--folder` for
another of the deployment's roots). The model is scripted (offline, no API key): it asks for
`create_file`, which needs a person's approval in the example deployment, then answers with what
the tool returned. To use a real model, give `agent_graph` a chat model that binds tools, e.g.
`ChatOpenAI(model="gpt-5-mini")` (the `langchain-openai` package).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from temporalio import workflow

# This file is named like the package it uses: keep its folder from shadowing `langgraph` (the
# workflow's sandbox imports this file again, and has the path it had then).
if not workflow.unsafe.in_sandbox():
    HERE = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    os.environ.setdefault("TOOLCALLS_CONFIG", "examples/toolcalls.toml")

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.langgraph import graph
from temporalio.service import RPCError

import toolcalls
from toolcalls.agents.langgraph import agent_graph, agent_worker, langchain_tools, toolcalls_config

SCRATCH = Path("/tmp/toolcalls-scratch")
CALL_ID = "write-note"


class ScriptedModel(BaseChatModel):
    """Asks for one `create_file`, then answers with the tool's message."""

    path: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if results:
            reply = AIMessage(
                content=f"I asked to write {self.path}; the tool said: {results[-1].content}"
            )
        else:
            arguments = {"path": self.path, "content": "written by a LangGraph agent\n"}
            reply = AIMessage(
                content="", tool_calls=[{"name": "create_file", "args": arguments, "id": CALL_ID}]
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


@workflow.defn
class NoteAgent:
    @workflow.run
    async def run(self, deployment_queue: str) -> str:
        app = graph("agent").compile()
        calls = toolcalls.ToolCalls(task_queue=deployment_queue)
        state = await app.ainvoke(
            {"messages": [HumanMessage("Write a short note to a file.")]},
            config=toolcalls_config(calls),
        )
        return str(state["messages"][-1].content)


async def waiting(calls: toolcalls.ToolCallClient, call: str) -> None:
    """Until the call waits for an approval."""
    for _ in range(600):
        try:
            await calls.pending_approval(call)
            return
        except (LookupError, RPCError):  # not started yet, or not waiting yet
            await asyncio.sleep(0.1)
    raise TimeoutError(f"{call}: no approval request after a minute")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approve-as", metavar="NAME", help="approve the agent's call yourself")
    parser.add_argument("--task-queue", default="toolcalls", help="the deployment's task queue")
    parser.add_argument("--folder", type=Path, default=SCRATCH, help=f"the note's ({SCRATCH})")
    args = parser.parse_args()
    client = await Client.connect(
        **ClientConfig.load_client_connect_config(), data_converter=toolcalls.data_converter()
    )
    calls = toolcalls.ToolCallClient(client, task_queue=args.task_queue)
    # The tools, as the deployment defines them: asked once, when the agent's worker starts.
    definitions = await calls.definitions(format="openai")
    model = ScriptedModel(path=str(args.folder / f"langgraph-{uuid.uuid4().hex[:8]}.txt"))
    graphs = {"agent": agent_graph(model, langchain_tools(definitions))}
    queue = f"langgraph-agent-{uuid.uuid4().hex[:8]}"
    async with agent_worker(
        client, task_queue=queue, workflows=[NoteAgent], graphs=graphs
    ) as agents:
        handle = await agents.start(NoteAgent.run, args.task_queue, id=f"note-agent-{uuid.uuid4()}")
        call = f"{handle.id}/tools/{CALL_ID}"
        await waiting(calls, call)
        if args.approve_as:
            await calls.approve(call, approver=args.approve_as)
        else:
            print(f"waiting for an approval: toolcalls approve {call} --by NAME", flush=True)
        print(await handle.result())
    return 0


if __name__ == "__main__" and not workflow.unsafe.in_sandbox():
    toolcalls.run_script(main)
