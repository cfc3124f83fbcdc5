"""``tools/list``: the deployment's enabled tools in MCP's shape, with annotations.

Names, descriptions and input schemas are the catalog's MCP definitions (the same strict schemas
every provider gets). The output schema is the tool's result model, which is what a completed
call's structured content holds; where the model allows any JSON value (pydantic's ``JsonValue``,
an empty schema), the schema says so as an ``anyOf`` of the six JSON types, which accepts the
same values and draws no "untyped schema" finding from strict checkers (the MCP Inspector's
``--strict``). The annotations are hints derived from what the catalog knows about each tool:

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

TOOLS_TTL_MS = 300_000
"""How long a client may keep ``tools/list`` (``ttlMs``, 2026-07-28): the list comes from the
configuration, which changes only when the server restarts. Its ``cacheScope`` is ``private``:
under OAuth the list depends on the token's scopes."""
ANY_JSON: dict[str, Any] = {
    "anyOf": [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "number"},
        {"type": "string"},
        {"type": "array"},
        {"type": "object"},
    ]
}
"""Any JSON value, written with types: what an empty schema (``{}``) accepts."""
ANNOTATION_KEYS = frozenset({"title", "description", "default", "examples", "$comment"})
"""Keywords that describe a value without constraining it."""
SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
SCHEMA_VALUES = ("items", "additionalProperties", "contains", "propertyNames")

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
    return typed(schema) if schema.get("type") == "object" else None


def typed(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every subschema that constrains nothing made ``ANY_JSON`` (keeping its
    title and description)."""
    if not schema.keys() - ANNOTATION_KEYS:
        return {**schema, **ANY_JSON}
    out = dict(schema)
    for key in SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {
                name: typed(sub) if isinstance(sub, dict) else sub for name, sub in out[key].items()
            }
    for key in SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [typed(sub) if isinstance(sub, dict) else sub for sub in out[key]]
    for key in SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = typed(out[key])
    return out


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
