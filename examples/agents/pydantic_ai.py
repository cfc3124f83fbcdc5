"""A pydantic-ai agent whose tools are the deployment's: it creates a file once a person approves.

With `make run` going, from the repository's root (`TOOLCALLS_CONFIG=examples/toolcalls.toml`):

    python examples/agents/pydantic_ai.py                     # prints the approve command, waits
    python examples/agents/pydantic_ai.py --approve-as alice  # approves its own call

It starts a worker of its own for the agent's workflow (`agent_worker`), finds the server through
TEMPORAL_ADDRESS or the Temporal profile (temporalio.envconfig) and runs an offline scripted model
(`FunctionModel`): it asks for `create_file` under the scratch folder (`--folder` for another of
the deployment's roots), which the deployment holds for a human, then answers with the tool's
result. For a real model, give `Agent` a model name (`"openai:gpt-5"`,
`"anthropic:claude-sonnet-4-5"`) and its API key in the worker's environment.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    # This file has the framework's name: take its folder off the import path, so that
    # `import pydantic_ai` finds pydantic-ai rather than this file. (Temporal's sandbox runs
    # this module again for the workflow, under another name, with pydantic-ai imported.)
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]

import argparse
import asyncio
import uuid

from pydantic_ai import Agent, ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.envconfig import ClientConfig

import toolcalls
from toolcalls import ToolCalls
from toolcalls.agents.pydantic_ai import ToolCallsToolset, agent_worker

SCRATCH = "/tmp/toolcalls-scratch"
"""Where the example deployment's file tools work (examples/toolcalls.toml)."""
CALL_ID = "create-1"


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """First turn: create the file the prompt names. Then: say what the tool returned."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    if len(messages) == 1:
        path = str(last.parts[-1].content).split()[-1]
        content = "written by a pydantic-ai agent, approved by a person\n"
        arguments = {"path": path, "content": content}
        return ModelResponse(parts=[ToolCallPart("create_file", arguments, tool_call_id=CALL_ID)])
    return ModelResponse(parts=[TextPart(f"create_file said: {last.parts[-1].content}")])


agent = Agent(
    FunctionModel(scripted_model),
    name="file_agent",
    deps_type=str,  # the deployment's task queue
    toolsets=[ToolCallsToolset(lambda ctx: ToolCalls(task_queue=ctx.deps))],
    capabilities=[TemporalDurability()],
)


@workflow.defn
class FileAgent(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, prompt: str, deployment_queue: str) -> str:
        result = await agent.run(prompt, deps=deployment_queue)
        return result.output


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approve-as", metavar="NAME", help="approve the agent's call as NAME")
    parser.add_argument(
        "--task-queue", default="toolcalls", help="the deployment's task queue (toolcalls)"
    )
    parser.add_argument("--folder", default=SCRATCH, help=f"where the note goes ({SCRATCH})")
    args = parser.parse_args()
    client = await Client.connect(
        **ClientConfig.load_client_connect_config(),
        data_converter=toolcalls.data_converter(),  # $TOOLCALLS_CONFIG's: store, keys
    )
    calls = toolcalls.ToolCallClient(client, task_queue=args.task_queue)
    agent_queue = f"pydantic-ai-agent-{uuid.uuid4().hex[:8]}"
    async with agent_worker(client, task_queue=agent_queue, workflows=[FileAgent]) as agents:
        path = f"{args.folder}/agent-{uuid.uuid4().hex[:8]}.txt"
        handle = await agents.start(
            FileAgent.run,
            f"Create a short note at {path}",
            args.task_queue,
            id=f"file-agent-{uuid.uuid4().hex[:8]}",
        )
        call_id = f"{handle.id}/tools/{CALL_ID}"  # the agent's child ToolCallWorkflow
        while not any(p.workflow_id == call_id for p in await calls.pending()):
            await asyncio.sleep(0.5)
        if args.approve_as:
            print(f"approving {call_id} as {args.approve_as}", flush=True)
            await calls.approve(call_id, approver=args.approve_as)
        else:
            print(f"waiting for a person: toolcalls approve {call_id} --by NAME", flush=True)
        print(await handle.result())
    return 0


if __name__ == "__main__":
    toolcalls.run_script(main)
