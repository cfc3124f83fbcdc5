"""``tools/list``: the deployment's enabled tools in MCP's shape, with annotations.

Names, descriptions and input schemas are the catalog's MCP definitions (the same strict schemas
every provider gets). The output schema is the tool's result model, which is what a completed
call's structured content holds. The annotations are hints derived from what the catalog knows
about each tool:

- ``readOnlyHint``: the tool's side-effect class is ``pure`` or ``read``.
- ``destructiveHint``: a ``write`` tool may change or remove what exists.
- ``idempotentHint``: repeating a ``pure`` or ``read`` call changes nothing; a ``write`` call is
  run once per call (the workflow id), never assumed safe to repeat.
- ``openWorldHint``: a capability reaches past the deployment's own files, storage and
  databases (the network, email, calendars, processes), or the tool's capabilities depend on its
  arguments and so cannot be bounded in advance.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolcalls.activities.catalog import Catalog
from toolcalls.activities.spec import ToolSpec
from toolcalls.workflows.models.call import SideEffect

CLOSED_WORLD_FAMILIES = frozenset({"filesystem", "storage", "database", "git", "user"})
"""Capability families whose calls touch only what the deployment holds (its roots, its storage
and databases, its checkouts) or the user of the client."""


def tool_definitions(catalog: Catalog, profile: str | None = None) -> list[types.Tool]:
    """Every enabled tool (or a profile's) as an MCP ``Tool``."""
    specs = {spec.name: spec for spec in catalog}
    return [
        types.Tool(
            name=definition["name"],
            description=definition["description"],
            input_schema=definition["inputSchema"],
            output_schema=output_schema(specs[definition["name"]]),
            annotations=tool_annotations(specs[definition["name"]]),
        )
        for definition in catalog.definitions("mcp", profile)
    ]


def output_schema(spec: ToolSpec) -> dict[str, Any] | None:
    """The JSON Schema of a completed call's output, when it is an object (MCP's requirement)."""
    schema = spec.result.model_json_schema(mode="serialization")
    return schema if schema.get("type") == "object" else None


def tool_annotations(spec: ToolSpec) -> types.ToolAnnotations:
    """The MCP hints for ``spec``: see the module docstring for how each is derived."""
    writes = spec.side_effect is SideEffect.WRITE
    return types.ToolAnnotations(
        read_only_hint=not writes,
        destructive_hint=writes,
        idempotent_hint=not writes,
        open_world_hint=open_world(spec),
    )


def open_world(spec: ToolSpec) -> bool:
    """Whether a call of ``spec`` may reach entities outside the deployment."""
    if callable(spec.capabilities):
        return True
    return any(cap.split(".", 1)[0] not in CLOSED_WORLD_FAMILIES for cap in spec.capabilities)
