"""OpenAI Agents SDK agents with the deployment's tools (``toolcalls.agents.openai_agents``).

A real dev server, our real worker for the deployment, and the agent's own worker with Temporal's
``OpenAIAgentsPlugin``; the model is ``ScriptedModel``, which runs in the plugin's model activity
and keeps what it read on every turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from agents import FunctionTool
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import TestModelProvider
from temporalio.worker import Replayer, Worker

from tests.support.harness import history_types, make_config, running_worker
from tests.support.inline import inline_config, listed
from tests.support.openai_agent import AgentInput, ToolAgent
from toolcalls.agents.openai_agents import agent_data_converter, function_tool, function_tools
from toolcalls.agents.openai_agents.testing import ScriptedModel
from toolcalls.worker.config import Config
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.definitions import (
    Definitions,
)
from toolcalls.workflows.models.inline import inline_workflow_id
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.reach.parent import ToolCalls

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "agent"
AGENT_TOOLS = ["calculator", "create_file", "read_file"]
MODEL_TIMEOUT = timedelta(seconds=10)
CHILD_STARTED = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
AgentHandle = WorkflowHandle[ToolAgent, str]


def deployment(
    task_queue: str,
    root: Path,
    monkeypatch: pytest.MonkeyPatch | None = None,
    checkpoints: str = "checkpoints.db",
) -> Config:
    """The test deployment: the agent's profile, files under ``root``; with ``monkeypatch``,
    keys for inline calls."""
    files = {"roots": [str(root)], "checkpoints": str(root.parent / checkpoints)}
    profiles = {PROFILE: {"tools": AGENT_TOOLS}}
    if monkeypatch is not None:
        return inline_config(
            task_queue, monkeypatch, tools=AGENT_TOOLS, files=files, profiles=profiles
        )
    return make_config(task_queue, tools=AGENT_TOOLS, files=files, profiles=profiles)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


def plugin(model: ScriptedModel) -> OpenAIAgentsPlugin:
    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=MODEL_TIMEOUT),
        model_provider=TestModelProvider(model),
    )


def agent_client(client: Client, config: Config, model: ScriptedModel) -> Client:
    """A client on the session's connection as the agent's application makes one."""
    settings = client.config()
    settings["data_converter"] = agent_data_converter(config)
    settings["plugins"] = [plugin(model)]
    return Client(**settings)


@asynccontextmanager
async def agent_worker(client: Client, queue: str) -> AsyncIterator[None]:
    """The agent's worker: every workflow task replays the whole history (no cache)."""
    async with Worker(
        client,
        task_queue=queue,
        workflows=[ToolAgent],
        workflow_runner=sandbox_runner(),
        max_cached_workflows=0,
    ):
        yield


async def start_agent(
    client: Client, queue: str, task_queue: str, *, inline: bool = False
) -> AgentHandle:
    return await client.start_workflow(
        ToolAgent.run,
        AgentInput(prompt="go", task_queue=task_queue, profile=PROFILE, inline=inline),
        id=f"agent-{uuid.uuid4()}",
        task_queue=queue,
        execution_timeout=timedelta(seconds=60),
    )


def outputs(model: ScriptedModel, turn: int) -> list[str]:
    """The tool outputs the model read on ``turn`` (0 is the first)."""
    return [
        str(item["output"])
        for item in model.inputs[turn]
        if item.get("type") == "function_call_output"
    ]


async def replays(handle: AgentHandle, config: Config, model: ScriptedModel) -> None:
    history = await handle.fetch_history()
    replayer = Replayer(
        workflows=[ToolAgent],
        plugins=[plugin(model)],
        data_converter=agent_data_converter(config),
        workflow_runner=sandbox_runner(),
    )
    await replayer.replay_workflow(history)


@pytest.mark.parametrize("inline", [False, True], ids=["child", "inline"])
async def test_an_allowed_tool_s_result_reaches_the_model_s_next_turn(
    client: Client,
    task_queue: str,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    inline: bool,
) -> None:
    config = deployment(task_queue, root, monkeypatch if inline else None)
    model = ScriptedModel([("calculator", {"expression": "6 * 7"})], answer="It is {output}")
    agents = agent_client(client, config, model)
    queue = f"agent-{uuid.uuid4()}"
    async with running_worker(client, config), agent_worker(agents, queue):
        handle = await start_agent(agents, queue, task_queue, inline=inline)
        answer = await handle.result()
    assert model.tools[0] == AGENT_TOOLS
    assert outputs(model, 0) == []
    [read] = outputs(model, 1)
    assert '"result": 42' in read
    assert answer == f"It is {read}"
    await replays(handle, config, model)


async def test_an_approval_waits_in_the_agent_s_workflow_across_worker_restarts(
    client: Client, task_queue: str, root: Path
) -> None:
    config = deployment(task_queue, root)
    target = root / "notes.txt"
    model = ScriptedModel([("create_file", {"path": str(target), "content": "hello\n"})])
    agents = agent_client(client, config, model)
    queue = f"agent-{uuid.uuid4()}"
    calls = ToolCallClient(client)
    async with running_worker(client, config), agent_worker(agents, queue):
        handle = await start_agent(agents, queue, task_queue)
        call_id = inline_workflow_id(handle.id, "call_1")
        pending = await listed(calls, call_id)
    assert pending.parent_id == handle.id
    assert pending.tool == "create_file"
    assert not target.exists()
    # Both workers were stopped while the call waited; new ones carry on from history. (A worker
    # keeps its checkpoint store locked until its process ends: the new one has its own.)
    restarted = deployment(task_queue, root, checkpoints="restarted.db")
    async with running_worker(client, restarted), agent_worker(agents, queue):
        await calls.approve(call_id, approver="alice")
        answer = await handle.result()
    assert target.read_text() == "hello\n"
    [read] = outputs(model, 1)
    assert str(target) in read
    assert answer == f"Done. The tool said: {read}"
    await replays(handle, config, model)


async def test_a_denial_s_reason_reaches_the_model(
    client: Client, task_queue: str, root: Path
) -> None:
    config = deployment(task_queue, root)
    target = root / "notes.txt"
    model = ScriptedModel([("create_file", {"path": str(target), "content": "hello\n"})])
    agents = agent_client(client, config, model)
    queue = f"agent-{uuid.uuid4()}"
    calls = ToolCallClient(client)
    async with running_worker(client, config), agent_worker(agents, queue):
        handle = await start_agent(agents, queue, task_queue)
        call_id = inline_workflow_id(handle.id, "call_1")
        await listed(calls, call_id)
        await calls.deny(call_id, approver="bob", reason="keep notes in notes/, not at the top")
        answer = await handle.result()
    assert not target.exists()
    [read] = outputs(model, 1)
    assert read.startswith("denied: approval_denied: ")
    assert "the approver said: keep notes in notes/, not at the top" in read
    assert answer == f"Done. The tool said: {read}"


async def test_an_answer_in_place_of_the_tool_reaches_the_model_as_its_output(
    client: Client, task_queue: str, root: Path
) -> None:
    config = deployment(task_queue, root)
    target = root / "notes.txt"
    model = ScriptedModel([("create_file", {"path": str(target), "content": "hello\n"})])
    agents = agent_client(client, config, model)
    queue = f"agent-{uuid.uuid4()}"
    calls = ToolCallClient(client)
    async with running_worker(client, config), agent_worker(agents, queue):
        handle = await start_agent(agents, queue, task_queue)
        call_id = inline_workflow_id(handle.id, "call_1")
        await listed(calls, call_id)
        await calls.respond(call_id, "notes.txt already says hello", responder="bob")
        answer = await handle.result()
    assert not target.exists()
    [read] = outputs(model, 1)
    assert read == (
        "a person answered in place of the tool (it did not run): notes.txt already says hello"
    )
    assert answer == f"Done. The tool said: {read}"


async def test_a_fixable_failure_lets_the_model_call_again_with_fixed_arguments(
    client: Client, task_queue: str, root: Path
) -> None:
    config = deployment(task_queue, root)
    model = ScriptedModel(
        [("calculator", {"expression": "1 / 0"}), ("calculator", {"expression": "1 / 4"})]
    )
    agents = agent_client(client, config, model)
    queue = f"agent-{uuid.uuid4()}"
    async with running_worker(client, config), agent_worker(agents, queue):
        handle = await start_agent(agents, queue, task_queue)
        answer = await handle.result()
    failed, fixed = outputs(model, 2)
    assert outputs(model, 1) == [failed]
    assert failed.startswith("failed: execution_failed: calculator: ")
    assert "(fix: expression)" in failed
    assert "call the tool again with expression fixed" in failed
    assert '"result": 0.25' in fixed
    assert answer == f"Done. The tool said: {fixed}"


async def test_arguments_that_are_not_a_json_object_start_nothing(
    client: Client, task_queue: str, root: Path
) -> None:
    config = deployment(task_queue, root)
    model = ScriptedModel([("calculator", "[1, 2]")])
    agents = agent_client(client, config, model)
    queue = f"agent-{uuid.uuid4()}"
    async with running_worker(client, config), agent_worker(agents, queue):
        handle = await start_agent(agents, queue, task_queue)
        await handle.result()
    [read] = outputs(model, 1)
    assert read.startswith(
        "failed: invalid_arguments: calculator: the arguments must be a JSON object, not an array"
    )
    assert "the tool did not run" in read
    assert CHILD_STARTED not in await history_types(handle)


SCHEMA = {
    "type": "object",
    "properties": {"expression": {"type": "string"}},
    "required": ["expression"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("key", ["parameters", "input_schema", "inputSchema"])
async def test_definitions_of_every_shape_become_strict_function_tools(key: str) -> None:
    given = Definitions(
        profile=None,
        digest=None,
        definitions=[{"name": "calculator", "description": "Arithmetic.", key: SCHEMA}],
    )
    [tool] = await function_tools(ToolCalls(), given)
    assert isinstance(tool, FunctionTool)
    assert (tool.name, tool.description) == ("calculator", "Arithmetic.")
    assert tool.params_json_schema == SCHEMA
    assert tool.strict_json_schema
    assert tool.needs_approval is False


def test_a_definition_without_a_schema_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^tool definition 'calculator': needs a name and one"):
        function_tool(ToolCalls(), {"name": "calculator", "description": "Arithmetic."})


@pytest.mark.parametrize("hidden", ["agents", "temporalio.openai_agents"])
def test_without_the_extra_the_import_error_names_it(tmp_path: Path, hidden: str) -> None:
    code = f"import sys; sys.modules[{hidden!r}] = None; import toolcalls.agents.openai_agents"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: toolcalls.agents.openai_agents needs the OpenAI Agents SDK and Temporal's "
        f"integration (no module {hidden!r}): pip install 'toolcalls[openai-agents]'"
    )


def test_a_folder_named_agents_ahead_of_the_sdk_is_named(tmp_path: Path) -> None:
    # A project of the user's with an agents/ package, Python started in its folder.
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text('"""A project of its own."""\n')
    done = subprocess.run(
        [sys.executable, "-c", "import toolcalls.agents.openai_agents"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"ImportError: the module imported as 'agents' ({tmp_path / 'agents' / '__init__.py'}) "
        "is not the OpenAI Agents SDK; start Python outside the folder that holds it"
    )
