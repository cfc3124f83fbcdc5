"""An OpenAI Agents SDK agent that writes a note with the example deployment's create_file.

Start the deployment with `make run`, then, from the repository's root:

    python examples/agents/openai_agents.py                     # prints `toolcalls approve ...`
    python examples/agents/openai_agents.py --approve-as alice  # approves its own call

The agent runs in a workflow on this script's own worker (`agent_worker`, with Temporal's
OpenAIAgentsPlugin): the model's turns are activities, and the tool the model asks for runs through
ToolCalls as a child ToolCallWorkflow on the deployment. create_file needs a person's approval
there, so the agent's workflow waits, durably, until someone approves (`toolcalls approve`, the
inbox, or this script). The model is offline and scripted (no API key): it asks for create_file,
then answers with what the tool returned. For a real model, set OPENAI_API_KEY, give the Agent a
model name, and leave out `model=` (docs/agents.md, "OpenAI Agents SDK").

The server comes from TEMPORAL_ADDRESS or your Temporal profile (default localhost:7233), the
deployment's configuration from TOOLCALLS_CONFIG (default examples/toolcalls.toml).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from pathlib import Path

from agents import Agent, Runner
from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.envconfig import ClientConfig

import toolcalls
from toolcalls import ToolCallClient, ToolCalls
from toolcalls.agents.openai_agents import agent_worker, function_tools
from toolcalls.agents.openai_agents.testing import ScriptedModel

AGENT_QUEUE = "openai-agents-example"
SCRATCH = Path("/tmp/toolcalls-scratch")
"""Where the example deployment's file tools work (examples/toolcalls.toml)."""


class NoteRequest(BaseModel):
    prompt: str
    task_queue: str
    """The deployment's task queue."""


@workflow.defn
class NoteTaker:
    """One agent run; every tool call is a child ToolCallWorkflow of this workflow."""

    @workflow.run
    async def run(self, request: NoteRequest) -> str:
        calls = ToolCalls(task_queue=request.task_queue)
        agent = Agent(
            name="Note taker",
            instructions="Write the user's note to a file, then say what the tool returned.",
            tools=await function_tools(calls),
        )
        result = await Runner.run(agent, request.prompt)
        return str(result.final_output)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approve-as", metavar="NAME", help="approve the agent's call as NAME")
    parser.add_argument("--task-queue", default="toolcalls", help="the deployment's task queue")
    parser.add_argument("--folder", type=Path, default=SCRATCH, help=f"the note's ({SCRATCH})")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # no traces sent to OpenAI
    connect = ClientConfig.load_client_connect_config()
    connect.setdefault("target_host", "localhost:7233")
    client = await Client.connect(**connect, data_converter=toolcalls.data_converter(config()))
    # Approving goes through the deployment's client: agent_worker's has the agents plugin.
    calls = ToolCallClient(client)

    note = args.folder / f"agent-note-{uuid.uuid4().hex[:8]}.txt"
    model = ScriptedModel(
        [("create_file", {"path": str(note), "content": "Buy milk.\n"})],
        answer="I saved your note. The tool said: {output}",
    )
    async with agent_worker(
        client, task_queue=AGENT_QUEUE, workflows=[NoteTaker], model=model
    ) as agents:
        handle = await agents.start(
            NoteTaker.run,
            NoteRequest(prompt=f"Save 'Buy milk.' to {note}", task_queue=args.task_queue),
            id=f"openai-agents-example-{uuid.uuid4().hex[:8]}",
        )
        print(f"agent workflow {handle.id} started")
        result = asyncio.ensure_future(handle.result())
        waiting = asyncio.ensure_future(waiting_call(calls, handle.id))
        # A deployment that allows the call without a person ends the run with no wait.
        await asyncio.wait({result, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            call = waiting.result()
            print(f"the agent waits for an approval: toolcalls approve {call} --by YOUR_NAME")
            if args.approve_as:
                await calls.approve(call, approver=args.approve_as)
                print(f"approved {call} as {args.approve_as}")
        waiting.cancel()
        answer = await result
    print(answer)
    return 0


def config() -> str:
    """$TOOLCALLS_CONFIG, else the example deployment's file."""
    example = Path(__file__).resolve().parents[1] / "toolcalls.toml"
    return os.environ.get("TOOLCALLS_CONFIG") or str(example)


async def waiting_call(calls: ToolCallClient, agent_id: str) -> str:
    """The id of the agent's call that waits for an approval, once it is listed."""
    while True:
        for call in await calls.pending():
            if call.parent_id == agent_id:
                return call.workflow_id
        await asyncio.sleep(0.5)


if __name__ == "__main__":
    toolcalls.run_script(main)
