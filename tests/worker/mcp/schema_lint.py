"""The MCP Inspector's tool-schema portability lint (``--method tools/list --strict``), in Python.

The Inspector's CLI walks every tool's ``inputSchema`` and ``outputSchema`` and reports:

- ``boolean-schema`` (error): a bare ``true``/``false`` where a schema object is expected (allowed
  only as the value of ``additionalProperties`` and its kin);
- ``type-union`` (warning): ``type`` given as an array of types;
- ``remote-ref`` (warning): a ``$ref`` outside the document;
- ``untyped-schema`` (warning): a schema with no keyword that constrains a value (``{}`` or one
  with only ``title``/``description``), except directly under ``not``.

It reaches every subschema: ``properties``, ``$defs``, ``items``, ``anyOf`` and the rest. The
``--strict`` check "reports nothing" when this finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

BOOLEAN_VALUED = frozenset(
    {"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
)
SUBSCHEMA = (
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
)
SUBSCHEMA_ARRAYS = ("allOf", "anyOf", "oneOf", "prefixItems")
SUBSCHEMA_MAPS = (
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
)
CONSTRAINING = frozenset(
    {
        *("type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum"),
        *("exclusiveMinimum", "maxLength", "minLength", "pattern", "format"),
        *("contentMediaType", "contentEncoding", "contentSchema", "maxItems", "minItems"),
        *("uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"),
        *("required", "dependentRequired", "allOf", "anyOf", "oneOf", "not", "items"),
        *("prefixItems", "contains", "additionalItems", "unevaluatedItems", "properties"),
        *("patternProperties", "additionalProperties", "unevaluatedProperties"),
        *("propertyNames", "dependentSchemas", "dependencies", "$ref", "$dynamicRef"),
        "$recursiveRef",
    }
)
TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
MAX_DEPTH = 64

Visit = Callable[[Any, str, str], None]


def lint_tools(tools: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each tool with findings: ``"<rule> <severity> <schema>.<path>"`` for each."""
    found: dict[str, list[str]] = {}
    for tool in tools:
        findings: list[str] = []
        for kind in ("inputSchema", "outputSchema"):
            if kind in tool and tool[kind] is not None:
                findings += lint_schema(tool[kind], kind)
        if findings:
            found[tool["name"]] = findings
    return found


def lint_schema(schema: Any, kind: str) -> list[str]:
    """The findings for one schema (``kind`` names it in each finding)."""
    findings: list[str] = []
    ids = _declares_id(schema, 0)

    def walk(node: Any, path: str, keyword: str | None, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        where = f"{kind}.{path}" if path else kind
        if isinstance(node, bool):
            if keyword not in BOOLEAN_VALUED:
                findings.append(f"boolean-schema error {where}")
            return
        if not isinstance(node, dict):
            return
        kind_of = node.get("type")
        if isinstance(kind_of, list) and _portable_union(kind_of):
            findings.append(f"type-union warning {where}")
        ref = node.get("$ref")
        if isinstance(ref, str) and ref and not ref.startswith("#") and not ids:
            findings.append(f"remote-ref warning {where}")
        if not _constrains(node) and keyword != "not":
            findings.append(f"untyped-schema warning {where}")
        for child, child_path, child_keyword in _subschemas(node, path):
            walk(child, child_path, child_keyword, depth + 1)

    walk(schema, "", None, 0)
    return findings


def _constrains(node: dict[str, Any]) -> bool:
    if any(key in CONSTRAINING for key in node):
        return True
    return "if" in node and ("then" in node or "else" in node)


def _portable_union(kinds: list[Any]) -> bool:
    if not kinds or not all(isinstance(kind, str) and kind in TYPES for kind in kinds):
        return False
    return len(set(kinds)) == len(kinds)


def _declares_id(node: Any, depth: int) -> bool:
    if depth > MAX_DEPTH or not isinstance(node, dict):
        return False
    if isinstance(node.get("$id"), str) and node["$id"]:
        return True
    return any(_declares_id(child, depth + 1) for child, _, _ in _subschemas(node, ""))


def _subschemas(node: dict[str, Any], path: str) -> Iterator[tuple[Any, str, str]]:
    for key in SUBSCHEMA_MAPS:
        found = node.get(key)
        if isinstance(found, dict):
            for name, sub in found.items():
                yield sub, _join(_join(path, key), name), key
    for key in SUBSCHEMA_ARRAYS:
        found = node.get(key)
        if isinstance(found, list):
            for index, sub in enumerate(found):
                yield sub, f"{_join(path, key)}[{index}]", key
    for key in SUBSCHEMA:
        if key not in node:
            continue
        value = node[key]
        if key == "items" and isinstance(value, list):
            for index, sub in enumerate(value):
                yield sub, f"{_join(path, key)}[{index}]", key
            continue
        yield value, _join(path, key), key


def _join(parent: str, key: str) -> str:
    if key.isidentifier() or key.replace("$", "_").isidentifier():
        return f"{parent}.{key}" if parent else key
    return f'{parent}["{key}"]'
