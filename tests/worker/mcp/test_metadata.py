"""What ``tools/list`` says about each tool: schemas that strict checkers accept, and how long a
client may keep the list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.activities.test_catalog_definitions import full_config
from tests.worker.mcp.schema_lint import lint_schema, lint_tools
from tests.worker.mcp.support import TOOLS, Deployment
from tests.worker.mcp.test_stdio_calls import modern_client
from toolcalls.activities.families import BUILTIN_FAMILIES
from toolcalls.worker.config import build_catalog
from toolcalls.worker.mcp.tools import TOOLS_TTL_MS, output_schema, tool_definitions

SPECS = {spec.name: spec for family in BUILTIN_FAMILIES for spec in family.tools}


@pytest.mark.parametrize("writes", [True, False], ids=["writes", "read-only"])
def test_no_tool_schema_draws_a_strict_finding(tmp_path: Path, writes: bool) -> None:
    catalog = build_catalog(full_config(tmp_path, writes=writes))
    tools = [
        tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        for tool in tool_definitions(catalog)
    ]
    assert len(tools) == len(catalog.names)
    assert all("outputSchema" in tool for tool in tools)
    assert lint_tools(tools) == {}


def test_the_lint_finds_what_the_inspector_reports() -> None:
    # The rules are not vacuous: what pydantic writes for JsonValue is a finding.
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"v": {"$ref": "#/$defs/JsonValue"}, "w": True, "n": {"title": "N"}},
        "additionalProperties": False,
        "$defs": {"JsonValue": {}, "Pair": {"type": ["string", "null"]}},
    }
    assert lint_schema(schema, "outputSchema") == [
        "boolean-schema error outputSchema.properties.w",
        "untyped-schema warning outputSchema.properties.n",
        "untyped-schema warning outputSchema.$defs.JsonValue",
        "type-union warning outputSchema.$defs.Pair",
    ]


@pytest.mark.parametrize(
    ("tool", "output"),
    [
        ("get_value", {"key": "k", "found": True, "value": {"a": [1, "b", None, 2.5, True]}}),
        ("get_value", {"key": "k", "found": False, "value": None}),
        ("list_calendar_events", None),
        ("query_database", None),
    ],
)
def test_typed_output_schemas_accept_what_the_tool_returns(
    tool: str, output: dict[str, Any] | None
) -> None:
    schema = output_schema(SPECS[tool])
    assert schema is not None
    jsonschema.Draft202012Validator.check_schema(schema)
    assert lint_schema(schema, "outputSchema") == []
    if output is not None:
        jsonschema.validate(output, schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**output, "found": "yes"}, schema)


async def test_tools_list_says_how_long_it_may_be_kept(
    tmp_path: Path, address: str, deployment: Deployment
) -> None:
    async with modern_client(tmp_path, address, deployment) as modern:
        assert modern.protocol_version == "2026-07-28"
        listed = await modern.list_tools()
    assert [tool.name for tool in listed.tools] == TOOLS
    assert (listed.ttl_ms, listed.cache_scope) == (TOOLS_TTL_MS, "private")
