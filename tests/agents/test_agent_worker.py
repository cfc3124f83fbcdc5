"""Each adapter's ``agent_worker``: the worker it builds, with its framework's plugin, serves an
agent's workflow whose model asks for our calculator and reads its result; the client it was
given is left as it was; bad arguments and a missing extra say what is wrong.

A real dev server, our worker for the deployment; the models are the adapters' offline ones.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.langgraph import LangGraphPlugin
from temporalio.openai_agents import OpenAIAgentsPlugin

from tests.support.harness import make_config, running_worker
from tests.support.langgraph_agent import GRAPH, AgentInput, AgentOutput, LangGraphAgent
from tests.support.openai_agent import AgentInput as OpenAIInput, ToolAgent
from tests.support.pydantic_scripted import CalculatorAgent
from toolcalls.agents import langgraph, openai_agents, pydantic_ai
from toolcalls.agents.openai_agents.testing import ScriptedModel
from toolcalls.workflows.reach.client import ToolCallClient

ROOT = Path(__file__).resolve().parents[2]
RESULT = '{"expression": "6 * 7", "result": 42}'
"""What the calculator returns, and the model reads, for ``6 * 7``."""
ASK = ("calculator", {"expression": "6 * 7"})


def agent_queue() -> str:
    return f"agents-{uuid.uuid4().hex[:12]}"


async def child_completed(client: Client, call: str) -> None:
    """The call ran through ``ToolCalls`` as a child ``ToolCallWorkflow`` of the agent's."""
    description = await client.get_workflow_handle(call).describe()
    assert description.workflow_type == "ToolCallWorkflow"
    assert description.status == WorkflowExecutionStatus.COMPLETED


def plugin_names(client: Client) -> list[str]:
    return [type(plugin).__name__ for plugin in client.config().get("plugins", ())]


async def test_pydantic_ai_s_worker_runs_the_agent_and_its_call(
    client: Client, task_queue: str
) -> None:
    queue = agent_queue()
    async with (
        running_worker(client, make_config(task_queue)),
        pydantic_ai.agent_worker(client, task_queue=queue, workflows=[CalculatorAgent]) as agents,
    ):
        handle = await agents.start(CalculatorAgent.run, "What is 6 * 7?", task_queue)
        answer = await asyncio.wait_for(handle.result(), 60)
        assert "PydanticAIPlugin" in plugin_names(agents.client)
    assert answer == f"the tool said: {RESULT}"
    assert handle.id.startswith(f"{queue}-")
    await child_completed(client, f"{handle.id}/tools/call_1")
    assert plugin_names(client) == []  # the given client is the deployment's, as it was


async def test_the_openai_agents_worker_runs_the_agent_with_the_model_it_is_given(
    client: Client, task_queue: str
) -> None:
    model = ScriptedModel([ASK], answer="the tool said: {output}")
    queue = agent_queue()
    async with (
        running_worker(client, make_config(task_queue)),
        openai_agents.agent_worker(
            client, task_queue=queue, workflows=[ToolAgent], model=model
        ) as agents,
    ):
        given = OpenAIInput(prompt="What is 6 * 7?", task_queue=task_queue)
        handle = await agents.start(ToolAgent.run, given, id=f"mine-{uuid.uuid4()}")
        answer = await asyncio.wait_for(handle.result(), 60)
        assert isinstance(agents.client.config()["plugins"][-1], OpenAIAgentsPlugin)
        # The given client is left for a ToolCallClient, which the plugin's converter refuses.
        view = await ToolCallClient(client, task_queue=task_queue).status(
            f"{handle.id}/tools/call_1"
        )
        assert view.parent_id == handle.id
    assert answer == f"the tool said: {RESULT}"
    assert handle.id.startswith("mine-")
    assert "calculator" in model.tools[0]
    await child_completed(client, f"{handle.id}/tools/call_1")


async def test_the_langgraph_worker_registers_the_graphs_and_runs_the_agent(
    client: Client, task_queue: str
) -> None:
    queue = agent_queue()
    async with running_worker(client, make_config(task_queue)):
        definitions = await ToolCallClient(client, task_queue=task_queue).definitions(
            format="openai"
        )
        model = langgraph.ScriptedChatModel(calls=[ASK], answer="the tool said: {output}")
        graphs = {GRAPH: langgraph.agent_graph(model, langgraph.langchain_tools(definitions))}
        async with langgraph.agent_worker(
            client, task_queue=queue, workflows=[LangGraphAgent], graphs=graphs
        ) as agents:
            given = AgentInput(question="What is 6 * 7?", task_queue=task_queue)
            output: AgentOutput = await asyncio.wait_for(
                agents.execute(LangGraphAgent.run, given), 60
            )
            assert isinstance(agents.client.config()["plugins"][-1], LangGraphPlugin)
    assert output.answer == f"the tool said: {RESULT}"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"task_queue": "", "workflows": [CalculatorAgent]}, "task_queue is empty"),
        ({"task_queue": "agents", "workflows": []}, "no workflows"),
    ],
)
async def test_a_worker_without_a_queue_or_workflows_is_refused(
    client: Client, options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValueError, match=f"^agent_worker: {problem}"):
        async with pydantic_ai.agent_worker(client, **options):
            pass


async def test_a_model_and_a_model_provider_are_refused_together(client: Client) -> None:
    from temporalio.openai_agents.testing import TestModelProvider

    model = ScriptedModel([ASK])
    with pytest.raises(TypeError, match="either model or model_provider, not both"):
        async with openai_agents.agent_worker(
            client,
            task_queue="agents",
            workflows=[ToolAgent],
            model=model,
            model_provider=TestModelProvider(model),
        ):
            pass


@pytest.mark.parametrize(
    ("adapter", "hidden", "extra"),
    [
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("pydantic_ai", "pydantic_ai.durable_exec.temporal", "pydantic-ai"),
        ("openai_agents", "agents", "openai-agents"),
        ("openai_agents", "temporalio.openai_agents", "openai-agents"),
        ("langgraph", "langgraph", "langgraph"),
        ("langgraph", "temporalio.langgraph", "langgraph"),
    ],
)
def test_without_the_extra_agent_worker_s_import_names_it(
    tmp_path: Path, adapter: str, hidden: str, extra: str
) -> None:
    code = (
        f"import sys; sys.modules[{hidden!r}] = None\n"
        f"from toolcalls.agents.{adapter} import agent_worker\n"
    )
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
    assert last.startswith(f"ImportError: toolcalls.agents.{adapter} needs "), last
    assert last.endswith(f"pip install 'toolcalls[{extra}]'"), last


def test_make_installs_each_adapter_s_extra() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [extras] = re.findall(r"pip install --quiet -e '\.\[([\w,-]+)\]'", makefile)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    for extra in ("pydantic-ai", "openai-agents", "langgraph"):
        assert extra in extras.split(","), f"make does not install the {extra} extra"
        assert extra in declared, f"pyproject.toml has no {extra} extra"
