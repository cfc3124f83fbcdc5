"""``toolcalls mcp`` over stdio with the SDK's ``ClientSession``: listing and plain calls."""

from __future__ import annotations

import json

from temporalio.client import Client

from tests.worker.mcp.conftest import Open
from tests.worker.mcp.support import TOOLS, Deployment, Recorder, text_of, workflow_of
from worker.config import build_catalog, load_config
from workflows.tool_call import ToolCallWorkflow


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
