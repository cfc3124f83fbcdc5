"""``toolcalls.agents.langgraph``: a LangGraph agent's tool calls run through ``ToolCalls``.

A real dev server, our worker for the deployment and a worker for the agent's workflow with
``LangGraphPlugin``; the model is scripted, and each test reads what it was shown.
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Replayer, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from tests.support.harness import make_config, pending_approval, running_worker
from tests.support.langgraph_agent import (
    GRAPH,
    AgentInput,
    AgentOutput,
    LangGraphAgent,
    ScriptedChatModel,
    asks,
)
from toolcalls.agents.langgraph import MissingToolCalls, agent_graph, langchain_tools
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.call import CapabilityPolicy, Effect
from toolcalls.workflows.reach.client import ToolCallClient

ROOT = Path(__file__).resolve().parents[2]
AgentHandle = WorkflowHandle[LangGraphAgent, AgentOutput]


def tool_messages(seen: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in seen if isinstance(m, ToolMessage)]


def answer_with_last_tool_message(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage(content="done: " + str(tool_messages(messages)[-1].content))


def scripted(*turns: AIMessage) -> ScriptedChatModel:
    """A model that says ``turns`` in order, then answers with the last tool message."""
    queue = list(turns)

    def script(messages: list[BaseMessage]) -> AIMessage:
        return queue.pop(0) if queue else answer_with_last_tool_message(messages)

    return ScriptedChatModel(script=script)


async def plugin(client: Client, task_queue: str, model: ScriptedChatModel) -> LangGraphPlugin:
    """The agent's plugin, its tools the deployment's definitions (asked at worker start)."""
    definitions = await ToolCallClient(client, task_queue=task_queue).definitions(format="openai")
    return LangGraphPlugin(graphs={GRAPH: agent_graph(model, langchain_tools(definitions))})


@asynccontextmanager
async def agent_worker(
    client: Client,
    deployment: str,
    model: ScriptedChatModel,
    queue: str,
    runner: WorkflowRunner | None = None,
) -> AsyncIterator[str]:
    async with Worker(
        client,
        task_queue=queue,
        workflows=[LangGraphAgent],
        workflow_runner=runner or sandbox_runner(),
        plugins=[await plugin(client, deployment, model)],
    ):
        yield queue


async def start_agent(client: Client, queue: str, input: AgentInput) -> AgentHandle:
    return await client.start_workflow(
        LangGraphAgent.run, input, id=f"agent-{uuid.uuid4()}", task_queue=queue
    )


async def run_agent(
    client: Client,
    task_queue: str,
    model: ScriptedChatModel,
    runner: WorkflowRunner | None = None,
    **input: Any,
) -> tuple[AgentHandle, AgentOutput]:
    async with (
        running_worker(client, make_config(task_queue)),
        agent_worker(client, task_queue, model, f"agent-{uuid.uuid4()}", runner) as queue,
    ):
        handle = await start_agent(
            client, queue, AgentInput(question="go", task_queue=task_queue, **input)
        )
        output = await asyncio.wait_for(handle.result(), 60)
    return handle, output


async def test_a_pure_tool_s_result_reaches_the_model_s_next_turn(
    client: Client, task_queue: str
) -> None:
    model = scripted(asks("calculator", {"expression": "6 * 7"}, "c1"))
    handle, output = await run_agent(client, task_queue, model)

    # The model was bound to the deployment's tools, with their strict schemas.
    assert "calculator" in model.bound
    [reply] = tool_messages(model.seen[1])
    assert reply.tool_call_id == "c1"
    assert reply.status == "success"
    assert json.loads(str(reply.content)) == {"expression": "6 * 7", "result": 42}
    assert output.answer == "done: " + str(reply.content)
    # The call id is the model's: the child workflow is named after it.
    child = client.get_workflow_handle(f"{handle.id}/tools/c1")
    assert (await child.describe()).status is not None


async def test_an_inline_call_runs_in_the_agent_s_workflow(client: Client, task_queue: str) -> None:
    model = scripted(asks("calculator", {"expression": "2 ** 10"}, "c1"))
    # The SDK's own sandbox, which re-imports our models: the result is read all the same.
    handle, _ = await run_agent(client, task_queue, model, SandboxedWorkflowRunner(), inline=True)

    [reply] = tool_messages(model.seen[1])
    assert json.loads(str(reply.content))["result"] == 1024
    history = await handle.fetch_history()
    children = [
        e
        for e in history.events
        if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]
    assert children == []


# Stopping the worker drops the waiting graph's coroutines, and LangGraph's async generators
# complain when they are collected (harmless: the next worker replays the run from history).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_an_approved_call_survives_a_restart_and_its_result_reaches_the_model(
    client: Client, task_queue: str
) -> None:
    model = scripted(asks("probe_write", {"token": "t1"}, "w1"))
    queue = f"agent-{uuid.uuid4()}"
    config = make_config(task_queue)
    async with running_worker(client, config), agent_worker(client, task_queue, model, queue):
        handle = await start_agent(client, queue, AgentInput(question="go", task_queue=task_queue))
        call_id = f"{handle.id}/tools/w1"
        await pending_approval(client.get_workflow_handle(call_id))
    assert len(model.seen) == 1  # the model waits with the call; nothing reached it yet
    gc.collect()  # here, not in a later test

    # Both workers were stopped while the call waited; new ones pick the wait up.
    async with running_worker(client, config), agent_worker(client, task_queue, model, queue):
        await ToolCallClient(client, task_queue=task_queue).approve(call_id, approver="alice")
        output = await asyncio.wait_for(handle.result(), 60)

    [reply] = tool_messages(model.seen[1])
    assert reply.status == "success"
    assert json.loads(str(reply.content))["approved_by"] == "alice"
    assert output.answer.startswith("done: ")


async def test_a_denial_s_reason_reaches_the_model(client: Client, task_queue: str) -> None:
    model = scripted(asks("probe_write", {"token": "t2"}, "w2"))
    queue = f"agent-{uuid.uuid4()}"
    async with (
        running_worker(client, make_config(task_queue)) as probes,
        agent_worker(client, task_queue, model, queue),
    ):
        handle = await start_agent(client, queue, AgentInput(question="go", task_queue=task_queue))
        call_id = f"{handle.id}/tools/w2"
        await pending_approval(client.get_workflow_handle(call_id))
        await ToolCallClient(client, task_queue=task_queue).deny(
            call_id, approver="bob", reason="use the staging token"
        )
        await asyncio.wait_for(handle.result(), 60)

    [reply] = tool_messages(model.seen[1])
    assert reply.status == "error"
    assert "denied: approval_denied" in str(reply.content)
    assert "the approver said: use the staging token" in str(reply.content)
    assert probes.runs.get("probe_write") is None


async def test_an_answer_in_place_of_the_tool_reaches_the_model_as_its_output(
    client: Client, task_queue: str
) -> None:
    model = scripted(asks("probe_write", {"token": "t4"}, "w4"))
    queue = f"agent-{uuid.uuid4()}"
    async with (
        running_worker(client, make_config(task_queue)) as probes,
        agent_worker(client, task_queue, model, queue),
    ):
        handle = await start_agent(client, queue, AgentInput(question="go", task_queue=task_queue))
        call_id = f"{handle.id}/tools/w4"
        await pending_approval(client.get_workflow_handle(call_id))
        await ToolCallClient(client, task_queue=task_queue).respond(
            call_id, "the staging token is already set", responder="bob"
        )
        await asyncio.wait_for(handle.result(), 60)

    [reply] = tool_messages(model.seen[1])
    assert reply.status == "success"
    assert reply.content == (
        "a person answered in place of the tool (it did not run): the staging token is already set"
    )
    assert probes.runs.get("probe_write") is None


async def test_a_fixable_failure_lets_the_model_call_again_with_fixed_arguments(
    client: Client, task_queue: str
) -> None:
    model = scripted(
        asks("calculator", {"expression": 7}, "bad"),
        asks("calculator", {"expression": "7 + 1"}, "good"),
    )
    _, output = await run_agent(
        client, task_queue, model, policy=CapabilityPolicy(default_effect=Effect.ALLOW)
    )

    [failed] = tool_messages(model.seen[1])
    assert failed.status == "error"
    assert "fix: expression" in str(failed.content)
    assert "the tool did not run" in str(failed.content)
    fixed = tool_messages(model.seen[2])[-1]
    assert fixed.status == "success"
    assert json.loads(str(fixed.content))["result"] == 8
    assert output.answer == "done: " + str(fixed.content)


async def test_the_agent_s_history_replays(client: Client, task_queue: str) -> None:
    model = scripted(asks("calculator", {"expression": "1 + 2"}, "r1"))
    handle, _ = await run_agent(client, task_queue, model)
    history = await handle.fetch_history()

    async with running_worker(client, make_config(task_queue)):
        replay_plugin = await plugin(client, task_queue, scripted())
    replay = await Replayer(
        workflows=[LangGraphAgent],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
        plugins=[replay_plugin],
    ).replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None


def test_importing_without_the_extra_names_it() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None\n"
        "try:\n"
        "    import toolcalls.agents.langgraph\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "pip install 'toolcalls[langgraph]'" in done.stdout


async def test_a_tool_without_tool_calls_in_the_config_says_how_to_give_it() -> None:
    schema = {"type": "object", "properties": {"expression": {"type": "string"}}}
    [tool] = langchain_tools([{"name": "calculator", "description": "", "parameters": schema}])
    call = {"type": "tool_call", "name": "calculator", "args": {"expression": "1"}, "id": "x"}
    with pytest.raises(MissingToolCalls, match=r"config=toolcalls_config\(ToolCalls"):
        await tool.ainvoke(call)
