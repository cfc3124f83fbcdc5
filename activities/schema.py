"""Strict, model-facing JSON Schemas from tool argument models.

One normaliser turns a pydantic schema into the strict shape model providers accept: references
inlined, objects with properties closed (``additionalProperties: false``), every property required,
and a property that has a default made explicitly nullable (``null`` means "use the default", which
``ToolArgs`` turns back into the default). Shapes it does not understand fail closed.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

_UNSUPPORTED = ("allOf", "not", "if", "then", "else", "patternProperties", "$dynamicRef")
_DROPPED = ("title", "default")
_VALUES = ("enum", "const", "examples")
"""Keywords whose values are data, not schemas: copied as they are."""


class SchemaError(ValueError):
    """A model cannot be expressed as a strict schema."""


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON Schema of ``model``'s validation input."""
    raw = model.model_json_schema(mode="validation")
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _normalise(raw, defs, ())
    return schema


def _normalise(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_normalise(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    for key in _UNSUPPORTED:
        if key in node:
            raise SchemaError(f"unsupported schema keyword {key!r}")
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            raise SchemaError(f"recursive schema {name!r}")
        if name not in defs:
            raise SchemaError(f"unresolved reference {node['$ref']!r}")
        merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _normalise(merged, defs, (*seen, name))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key in _VALUES:
            out[key] = value
        elif key == "properties":
            # Property names are the model's field names, not keywords: a field called
            # ``title`` or ``if`` is kept and its schema normalised like any other.
            out[key] = {name: _normalise(prop, defs, seen) for name, prop in value.items()}
        else:
            out[key] = _normalise(value, defs, seen)
    if out.get("type") == "object" and "properties" in node:
        required = set(node.get("required", ()))
        properties = {}
        for name, prop in out["properties"].items():
            source = node["properties"][name]
            if name not in required:
                prop = _nullable(prop, source)
            properties[name] = prop
        out["properties"] = properties
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def _nullable(prop: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    default = source.get("default")
    if _allows_null(prop):
        nullable = prop
    else:
        description = prop.pop("description", None)
        nullable = {"anyOf": [prop, {"type": "null"}]}
        if description:
            nullable["description"] = description
    if default is not None:
        note = f"null means the default, {json.dumps(default)}."
        existing = nullable.get("description")
        nullable["description"] = f"{existing} {note}" if existing else note[0].upper() + note[1:]
    return nullable


def _allows_null(prop: dict[str, Any]) -> bool:
    return prop.get("type") == "null" or any(
        isinstance(alt, dict) and alt.get("type") == "null" for alt in prop.get("anyOf", ())
    )
