"""``toolcalls mcp`` over stdio with the SDK's ``ClientSession``: listing and plain calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import mcp
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from temporalio.client import Client

from tests.support.harness import running_worker
from tests.worker.mcp.support import TOOLS, USER, Deployment, Open, Recorder, text_of, workflow_of
from tests.worker.support import TOOLCALLS, command, hermetic_env
from toolcalls.worker.config import build_catalog, load_config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow


async def test_lists_the_enabled_tools_with_schemas_and_annotations(
    session: Open, deployment: Deployment
) -> None:
    async with session() as mcp:  # no worker needed: the list comes from the configuration
        listed = await mcp.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert list(tools) == TOOLS
    for definition in build_catalog(load_config(deployment.path)).definitions("mcp"):
        tool = tools[definition["name"]]
        assert (tool.description, tool.input_schema) == (
            definition["description"],
            definition["inputSchema"],
        )
    hints = {
        name: (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,
            tool.annotations.idempotent_hint,
            tool.annotations.open_world_hint,
        )
        for name, tool in tools.items()
        if tool.annotations is not None
    }
    assert hints == {
        # read-only, destructive, idempotent, open world
        "calculator": (True, False, True, False),
        "current_datetime": (True, False, True, False),
        "ask_user": (True, False, True, False),
        "run_shell": (False, True, False, True),
        "get_value": (True, False, True, False),
        "set_value": (False, True, False, False),
    }
    calculator = tools["calculator"].output_schema
    assert calculator is not None
    assert calculator["required"] == ["expression", "result"]


async def test_calls_the_calculator(session: Open, worker: None, client: Client) -> None:
    recorder = Recorder()
    async with session() as mcp:
        result = await mcp.call_tool(
            "calculator", {"expression": "(18 + 6) / 3"}, progress_callback=recorder.on_progress
        )
    assert not result.is_error
    assert result.structured_content == {"expression": "(18 + 6) / 3", "result": 8.0}
    assert json.loads(text_of(result)) == result.structured_content
    workflow_id = workflow_of(result)
    assert workflow_id.startswith("mcp-")
    recorded = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    assert recorded.output == result.structured_content


def modern_client(
    tmp_path: Path, address: str, deployment: Deployment, **options: Any
) -> mcp.Client:
    """The SDK's ``Client`` in its default mode: it opens on the 2026-07-28 protocol."""
    server = mcp.StdioServerParameters(
        command=TOOLCALLS,
        args=["mcp", "--config", str(deployment.path), "--address", address],
        env=hermetic_env(tmp_path),
        cwd=tmp_path,
    )
    return mcp.Client(server, **options)


async def test_a_client_on_the_2026_protocol_is_asked_through_input_required_rounds(
    tmp_path: Path, address: str, deployment: Deployment, worker: None, client: Client
) -> None:
    # That protocol lets no server send requests to the client: the form comes back as the
    # request's input_required result, and the client's retry carries the answer.
    deployment.write("approve_via_elicitation = true")

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        if params.message.startswith("Approve"):
            return types.ElicitResult(action="accept", content={"decision": "approve"})
        return types.ElicitResult(action="accept", content={"answer": "because"})

    recorder = Recorder(answer)
    async with modern_client(
        tmp_path, address, deployment, elicitation_callback=recorder.elicit
    ) as modern:
        assert modern.protocol_version == "2026-07-28"
        product = await modern.call_tool("calculator", {"expression": "6 * 7"})
        asked = await modern.call_tool("ask_user", {"question": "Why?", "options": None})
        written = await modern.call_tool("set_value", {"key": "why", "value": '"because"'})
    assert product.structured_content == {"expression": "6 * 7", "result": 42}
    assert asked.structured_content is not None
    assert asked.structured_content["answer"] == "because"
    assert [form.message.splitlines()[0] for form in recorder.forms] == [
        "Why?",
        "Approve this set_value call?",
    ]
    assert not written.is_error, text_of(written)
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_of(written))
    recorded = await handle.result()
    assert recorded.approval is not None
    assert recorded.approval.approver == USER


async def test_a_client_on_the_2026_protocol_without_forms_is_told_where_to_answer(
    tmp_path: Path, address: str, deployment: Deployment, worker: None
) -> None:
    recorder = Recorder()
    async with modern_client(tmp_path, address, deployment) as modern:
        asking = asyncio.ensure_future(
            modern.call_tool(
                "ask_user",
                {"question": "Why?", "options": None},
                progress_callback=recorder.on_progress,
            )
        )
        workflow_id = await recorder.waiting_for_answer()
        answered = await command(tmp_path, address, "answer", workflow_id, "because")
        assert answered.code == 0, answered.stderr
        asked = await asyncio.wait_for(asking, 60)
    assert asked.structured_content is not None
    assert asked.structured_content["answer"] == "because"


async def test_serves_one_profile_and_holds_calls_to_it(
    session: Open, deployment: Deployment, client: Client, tmp_path: Path, address: str
) -> None:
    deployment.write('profile = "maths"', extra='[profiles.maths]\ntools = ["calculator"]\n')
    async with running_worker(client, load_config(deployment.path)), session() as mcp:
        listed = await mcp.list_tools()
        assert [tool.name for tool in listed.tools] == ["calculator"]
        done = await mcp.call_tool("calculator", {"expression": "2 ** 5"})
        assert done.structured_content == {"expression": "2 ** 5", "result": 32}
        # A tool outside the profile is not offered: the same protocol error as an unknown one.
        with pytest.raises(MCPError) as refused:
            await mcp.call_tool("current_datetime", {})
    assert refused.value.error.code == types.INVALID_PARAMS
    assert refused.value.error.message == ("unknown tool 'current_datetime'; available: calculator")
    # --profile naming a profile the deployment lacks is a usage error before anything starts.
    deployment.write(extra='[profiles.maths]\ntools = ["calculator"]\n')
    done_cli = await command(
        tmp_path, address, "mcp", "--config", str(deployment.path), "--profile", "nope"
    )
    assert (done_cli.code, done_cli.stderr) == (
        2,
        "toolcalls: mcp: no profile 'nope'; profiles: maths\n",
    )
