"""A pydantic-ai agent (``TemporalDurability``) using the deployment's tools through
``ToolCallsToolset``: what its scripted model reads back for each outcome, approvals that survive
restarts of every worker, and a replay of the agent's workflow."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from pydantic_ai.exceptions import UserError
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer, Worker

from tests.support.harness import (
    Handle,
    history_types,
    make_config,
    pending_approval,
    running_worker,
)
from tests.support.pydantic_agent import (
    SCRIPTS,
    SEEN,
    AgentDeps,
    AgentInput,
    ToolAgentWorkflow,
    Turn,
    WrappedAgentWorkflow,
    run_calls,
)
from tests.support.tools import ProbeTools
from toolcalls.agents.pydantic_ai import ToolCallsToolset
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.inline import inline_workflow_id
from toolcalls.workflows.reach.client import ToolCallClient

ROOT = Path(__file__).resolve().parents[2]
CHILD_STARTED = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
AgentHandle = WorkflowHandle[ToolAgentWorkflow, str]


@asynccontextmanager
async def agent_worker(
    client: Client, queue: str, agent_workflow: type = ToolAgentWorkflow
) -> AsyncIterator[None]:
    """The application's worker for the agent's workflow, as pydantic-ai's docs set one up."""
    async with Worker(
        client,
        task_queue=queue,
        workflows=[agent_workflow],
        workflow_runner=sandbox_runner(),
        plugins=[PydanticAIPlugin()],
        max_cached_workflows=0,
    ):
        yield


def call(tool: str, arguments: dict[str, Any], call_id: str) -> Turn:
    return lambda _: ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=call_id)])


def answer(messages: list[ModelMessage]) -> ModelResponse:
    """The model's last turn: it tells what the tool said."""
    return ModelResponse(parts=[TextPart(f"the tool said: {last_return(messages).content}")])


def last_return(messages: Sequence[ModelMessage]) -> ToolReturnPart:
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    parts = [part for part in request.parts if isinstance(part, ToolReturnPart)]
    assert len(parts) == 1, request.parts
    return parts[0]


def script(*turns: Turn) -> str:
    """A fresh prompt whose run follows ``turns``."""
    prompt = f"task {uuid.uuid4()}"
    SCRIPTS[prompt] = list(turns)
    return prompt


async def start_agent(
    client: Client, queue: str, prompt: str, task_queue: str, inline: bool = False
) -> AgentHandle:
    return await client.start_workflow(
        ToolAgentWorkflow.run,
        AgentInput(prompt=prompt, deps=AgentDeps(task_queue=task_queue, inline=inline)),
        id=f"agent-{uuid.uuid4()}",
        task_queue=queue,
    )


async def replay(handle: AgentHandle) -> None:
    """Replay the agent's recorded history with the worker's settings (raises on divergence)."""
    replayer = Replayer(
        workflows=[ToolAgentWorkflow],
        workflow_runner=sandbox_runner(),
        plugins=[PydanticAIPlugin()],
    )
    await replayer.replay_workflow(await handle.fetch_history())


@pytest.fixture
def queue() -> str:
    return f"agent-{uuid.uuid4()}"


@pytest.mark.parametrize("inline", [False, True], ids=["child", "inline"])
async def test_a_pure_tools_result_reaches_the_models_next_turn(
    client: Client, task_queue: str, queue: str, inline: bool
) -> None:
    prompt = script(call("calculator", {"expression": "2 ** 10"}, "c1"), answer)
    async with running_worker(client, make_config(task_queue)), agent_worker(client, queue):
        handle = await start_agent(client, queue, prompt, task_queue, inline)
        output = await asyncio.wait_for(handle.result(), 60)
    seen = SEEN[prompt]
    offered = {tool.name: tool for tool in seen.tools[0]}
    assert {"calculator", "probe_write"} <= offered.keys()
    assert offered["calculator"].strict is True
    assert offered["calculator"].parameters_json_schema["required"] == ["expression"]
    returned = last_return(seen.turns[1])
    assert (returned.tool_call_id, returned.outcome) == ("c1", "success")
    assert returned.content == '{"expression": "2 ** 10", "result": 1024}'
    assert output == 'the tool said: {"expression": "2 ** 10", "result": 1024}'
    assert (CHILD_STARTED in await history_types(handle)) is not inline


async def test_under_the_deprecated_temporal_agent_the_toolset_works_the_same(
    client: Client, task_queue: str, queue: str
) -> None:
    prompt = script(call("calculator", {"expression": "2 ** 10"}, "c1"), answer)
    async with (
        running_worker(client, make_config(task_queue)),
        agent_worker(client, queue, WrappedAgentWorkflow),
    ):
        handle = await client.start_workflow(
            WrappedAgentWorkflow.run,
            AgentInput(prompt=prompt, deps=AgentDeps(task_queue=task_queue)),
            id=f"agent-{uuid.uuid4()}",
            task_queue=queue,
        )
        output = await asyncio.wait_for(handle.result(), 60)
    assert output == 'the tool said: {"expression": "2 ** 10", "result": 1024}'
    assert CHILD_STARTED in await history_types(handle)


async def test_an_approval_waits_durably_across_worker_restarts(
    client: Client, task_queue: str, queue: str
) -> None:
    prompt = script(call("probe_write", {"token": "t1"}, "w1"), answer)
    config = make_config(task_queue)
    probes = ProbeTools()
    async with running_worker(client, config, probes), agent_worker(client, queue):
        handle = await start_agent(client, queue, prompt, task_queue)
        child_id = inline_workflow_id(handle.id, "w1")
        child: Handle = client.get_workflow_handle_for(ToolCallWorkflow.run, child_id)
        pending = await pending_approval(child)
    assert pending.tool == "probe_write"
    assert probes.runs == {}
    async with running_worker(client, config, probes), agent_worker(client, queue):
        calls = ToolCallClient(client, task_queue=task_queue)
        await calls.approve(child_id, approver="alice")
        output = await asyncio.wait_for(handle.result(), 60)
    assert probes.runs == {"probe_write": 1}
    returned = last_return(SEEN[prompt].turns[1])
    assert returned.outcome == "success"
    assert '"token": "t1"' in str(returned.content)
    assert '"approved_by": "alice"' in str(returned.content)
    assert output.startswith("the tool said: {")
    assert len(SEEN[prompt].turns) == 2
    await replay(handle)


async def test_a_denial_and_its_reason_reach_the_model(
    client: Client, task_queue: str, queue: str
) -> None:
    prompt = script(call("probe_write", {"token": "t2"}, "w2"), answer)
    probes = ProbeTools()
    async with running_worker(client, make_config(task_queue), probes), agent_worker(client, queue):
        handle = await start_agent(client, queue, prompt, task_queue)
        child_id = inline_workflow_id(handle.id, "w2")
        await pending_approval(client.get_workflow_handle_for(ToolCallWorkflow.run, child_id))
        calls = ToolCallClient(client, task_queue=task_queue)
        await calls.deny(child_id, approver="bob", reason="write to the staging copy instead")
        output = await asyncio.wait_for(handle.result(), 60)
    assert probes.runs == {}
    returned = last_return(SEEN[prompt].turns[1])
    assert returned.outcome == "failed"
    assert str(returned.content).startswith("denied: approval_denied: ")
    assert "the approver said: write to the staging copy instead" in str(returned.content)
    assert "the tool did not run" in str(returned.content)
    assert "staging copy" in output


async def test_an_answer_in_place_of_the_tool_reaches_the_model_as_its_output(
    client: Client, task_queue: str, queue: str
) -> None:
    prompt = script(call("probe_write", {"token": "t3"}, "w3"), answer)
    probes = ProbeTools()
    async with running_worker(client, make_config(task_queue), probes), agent_worker(client, queue):
        handle = await start_agent(client, queue, prompt, task_queue)
        child_id = inline_workflow_id(handle.id, "w3")
        await pending_approval(client.get_workflow_handle_for(ToolCallWorkflow.run, child_id))
        calls = ToolCallClient(client, task_queue=task_queue)
        await calls.respond(child_id, "The staging copy is already up to date.", responder="bob")
        output = await asyncio.wait_for(handle.result(), 60)
    assert probes.runs == {}
    returned = last_return(SEEN[prompt].turns[1])
    assert returned.outcome == "success"
    assert returned.content == (
        "a person answered in place of the tool (it did not run): "
        "The staging copy is already up to date."
    )
    assert "already up to date" in output
    await replay(handle)


async def test_a_fixable_failure_asks_the_model_to_call_again(
    client: Client, task_queue: str, queue: str
) -> None:
    prompt = script(
        call("calculator", {"expression": "2 +* 3"}, "c1"),
        call("calculator", {"expression": "2 + 3"}, "c2"),
        answer,
    )
    async with running_worker(client, make_config(task_queue)), agent_worker(client, queue):
        handle = await start_agent(client, queue, prompt, task_queue, inline=True)
        output = await asyncio.wait_for(handle.result(), 60)
    turns = SEEN[prompt].turns
    retried = last_return(turns[1])
    assert (retried.tool_call_id, retried.outcome) == ("c1", "retried")
    assert str(retried.content) == (
        "failed: invalid_arguments: calculator: invalid arguments: expression: invalid "
        "expression: invalid syntax (fix: expression)\nthe tool did not run"
    )
    fixed = last_return(turns[2])
    assert (fixed.tool_call_id, fixed.outcome) == ("c2", "success")
    assert output == 'the tool said: {"expression": "2 + 3", "result": 5}'
    await replay(handle)


async def test_once_the_retries_are_used_up_the_model_reads_the_failure(
    client: Client, task_queue: str, queue: str
) -> None:
    # Three bad calls: two retries (the toolset's default), then a failed result, and the run
    # goes on instead of failing on pydantic-ai's retry limit.
    bad = [call("calculator", {"expression": "2 +* 3"}, f"c{i}") for i in (1, 2, 3)]
    prompt = script(*bad, answer)
    async with running_worker(client, make_config(task_queue)), agent_worker(client, queue):
        handle = await start_agent(client, queue, prompt, task_queue, inline=True)
        output = await asyncio.wait_for(handle.result(), 60)
    outcomes = [last_return(turn).outcome for turn in SEEN[prompt].turns[1:]]
    assert outcomes == ["retried", "retried", "failed"]
    assert output.startswith("the tool said: failed: invalid_arguments: calculator: ")


async def test_a_profile_the_deployment_lacks_fails_the_run_saying_so(
    client: Client, task_queue: str, queue: str
) -> None:
    prompt = script(answer)
    deps = AgentDeps(task_queue=task_queue, profile="nope")
    async with running_worker(client, make_config(task_queue)), agent_worker(client, queue):
        handle = await client.start_workflow(
            ToolAgentWorkflow.run,
            AgentInput(prompt=prompt, deps=deps),
            id=f"agent-{uuid.uuid4()}",
            task_queue=queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), 60)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UserError"
    assert cause.message == (
        f"toolset 'toolcalls': no tool definitions from the deployment on task queue "
        f"'{task_queue}': invalid_arguments: no profile 'nope'"
    )
    assert prompt not in SEEN  # the model was never asked


def test_without_the_extra_the_import_error_names_it() -> None:
    hide = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "try:\n"
        "    import toolcalls.agents.pydantic_ai\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == (
        "toolcalls.agents.pydantic_ai needs pydantic-ai (pydantic_ai is missing): "
        "pip install 'toolcalls[pydantic-ai]'"
    )


def test_a_toolset_takes_either_a_calls_function_or_settings() -> None:
    with pytest.raises(TypeError, match="either calls or its settings, not both"):
        ToolCallsToolset(run_calls, task_queue="elsewhere")


async def test_outside_a_workflow_its_tools_say_where_they_run() -> None:
    toolset = ToolCallsToolset(task_queue="toolcalls")
    with pytest.raises(UserError, match="for an agent run inside a Temporal workflow"):
        await toolset.get_tools(None)  # type: ignore[arg-type]
