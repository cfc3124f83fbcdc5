"""Strict, model-facing JSON Schemas from tool argument models.

One normaliser turns a pydantic schema into the strict shape model providers accept: references
inlined, objects with properties closed (``additionalProperties: false``), every property required,
and a property that has a default made explicitly nullable (``null`` means "use the default", which
``ToolArgs`` turns back into the default). Constraints the strict subset lacks (string lengths, a
format it does not know) are left out of the schema; the arguments model still enforces them when a
call is planned.

``strict_problems`` then checks the result against the subset OpenAI documents for Structured
Outputs and strict function calling (its "Supported schemas"), the strictest of the providers'
rules: the root is an object; every node has a type; every object is closed and requires all its
properties; only the supported keywords appear (strings: ``pattern`` and a few ``format`` values;
numbers: ``multipleOf``, ``maximum``, ``exclusiveMaximum``, ``minimum``, ``exclusiveMinimum``;
arrays: ``items``, ``minItems``, ``maxItems``; any node: ``type``, ``enum``, ``const``, ``anyOf``,
``$ref`` to ``$defs``, ``description``, ``title``), with no ``default``; and the documented size
limits hold. A model whose schema fails it has no strict schema (``SchemaError``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

_DROPPED = ("title", "default", "examples", "minLength", "maxLength")
"""Annotations the strict schema needs no copy of, and string lengths, which the strict subset
does not support: the arguments model checks lengths when a call is planned."""
_VALUES = ("enum", "const")
"""Keywords whose values are data, not schemas: copied as they are."""

STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The ``format`` values of the strict subset; another format is left out of the schema."""
MAX_PROPERTIES = 5_000
"""Object properties in one schema, all objects together."""
MAX_NESTING = 10
"""Levels of object nesting, the root object being the first."""
MAX_ENUM_VALUES = 1_000
"""Enum values in one schema, all enums together."""
MAX_SCHEMA_CHARS = 120_000
"""Characters of all property names, definition names, enum values and const values."""
LARGE_ENUM_VALUES = 250
MAX_LARGE_ENUM_CHARS = 15_000
"""A string enum of more than ``LARGE_ENUM_VALUES`` values has at most this many characters."""

_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_ANY_NODE = frozenset({"type", "description", "title", "enum", "const", "anyOf", "$ref"})
_NUMBER = frozenset({"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})
_BY_TYPE: dict[str, frozenset[str]] = {
    "string": frozenset({"pattern", "format"}),
    "number": _NUMBER,
    "integer": _NUMBER,
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "boolean": frozenset(),
    "null": frozenset(),
}


class SchemaError(ValueError):
    """A model cannot be expressed as a strict schema."""


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON Schema of ``model``'s validation input.

    Raises:
        SchemaError: the schema cannot be made strict (``strict_problems`` names each problem).
    """
    raw = model.model_json_schema(mode="validation")
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _normalise(raw, defs, ())
    problems = strict_problems(schema)
    if problems:
        raise SchemaError("; ".join(problems))
    return schema


def strict_problems(schema: Any) -> list[str]:
    """What keeps ``schema`` from being a strict tool schema, each naming where; empty when none."""
    check = _Check(schema)
    if not isinstance(schema, dict):
        return ["#: the schema must be an object"]
    if schema.get("type") != "object":
        check.problems.append('#: the root must have type "object"')
    if "anyOf" in schema:
        check.problems.append("#: the root must not be anyOf")
    defs = schema.get("$defs", {})
    if not isinstance(defs, dict):
        check.problems.append("#/$defs: must be an object")
        defs = {}
    for name, sub in defs.items():
        check.chars += len(name)
        check.node(sub, f"#/$defs/{name}", 1)
    check.node({k: v for k, v in schema.items() if k != "$defs"}, "#", 1)
    return check.finish()


class _Check:
    """One walk over a schema, collecting problems and the sizes the limits bound."""

    def __init__(self, root: Any) -> None:
        self.defs = root.get("$defs", {}) if isinstance(root, dict) else {}
        self.problems: list[str] = []
        self.properties = 0
        self.enum_values = 0
        self.chars = 0

    def finish(self) -> list[str]:
        for count, limit, what in (
            (self.properties, MAX_PROPERTIES, "object properties"),
            (self.enum_values, MAX_ENUM_VALUES, "enum values"),
            (self.chars, MAX_SCHEMA_CHARS, "characters of names, enum and const values"),
        ):
            if count > limit:
                self.problems.append(f"#: {count} {what}; the limit is {limit}")
        return self.problems

    def node(self, node: Any, at: str, depth: int) -> None:
        if not isinstance(node, dict):
            self.problems.append(f"{at}: a schema must be an object")
            return
        types = self._types(node, at)
        allowed = _ANY_NODE.union(*(_BY_TYPE[t] for t in types))
        for key in node:
            if key not in allowed:
                self.problems.append(f"{at}: unsupported schema keyword {key!r}")
        for key in ("description", "title"):
            if key in node and not isinstance(node[key], str):
                self.problems.append(f"{at}/{key}: must be a string")
        self._values(node, at)
        if "$ref" in node:
            self._ref(node["$ref"], at)
        if "anyOf" in node:
            alternatives = node["anyOf"]
            if not isinstance(alternatives, list) or not alternatives:
                self.problems.append(f"{at}/anyOf: must be a nonempty list")
            else:
                for index, sub in enumerate(alternatives):
                    self.node(sub, f"{at}/anyOf/{index}", depth)
        if "string" in types:
            self._string(node, at)
        if "integer" in types or "number" in types:
            for key in _NUMBER & node.keys():
                if not _is_number(node[key]) or (key == "multipleOf" and node[key] <= 0):
                    self.problems.append(f"{at}/{key}: invalid value {node[key]!r}")
        if "array" in types:
            self._array(node, at, depth)
        if "object" in types:
            self._object(node, at, depth)

    def _types(self, node: dict[str, Any], at: str) -> list[str]:
        if "type" not in node:
            if "anyOf" not in node and "$ref" not in node:
                self.problems.append(f"{at}: no type")
            return []
        value = node["type"]
        types = value if isinstance(value, list) else [value]
        if (
            not types
            or not all(isinstance(t, str) and t in _TYPES for t in types)
            or len(set(types)) != len(types)
        ):
            self.problems.append(f"{at}/type: invalid value {value!r}")
            return []
        return types

    def _values(self, node: dict[str, Any], at: str) -> None:
        if "enum" in node:
            values = node["enum"]
            if not isinstance(values, list) or not values:
                self.problems.append(f"{at}/enum: must be a nonempty list")
                return
            self.enum_values += len(values)
            text = sum(len(v) for v in values if isinstance(v, str))
            self.chars += text
            if len(values) > LARGE_ENUM_VALUES and text > MAX_LARGE_ENUM_CHARS:
                self.problems.append(
                    f"{at}/enum: {len(values)} values of {text} characters; over "
                    f"{LARGE_ENUM_VALUES} values, the limit is {MAX_LARGE_ENUM_CHARS} characters"
                )
        if isinstance(node.get("const"), str):
            self.chars += len(node["const"])

    def _ref(self, ref: Any, at: str) -> None:
        name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
        if ref != "#" and (name is None or name == ref or name not in self.defs):
            self.problems.append(f"{at}/$ref: {ref!r} is neither '#' nor one of $defs")

    def _string(self, node: dict[str, Any], at: str) -> None:
        if "format" in node and node["format"] not in STRING_FORMATS:
            self.problems.append(f"{at}/format: {node['format']!r} is not a supported format")
        if "pattern" in node:
            try:
                re.compile(node["pattern"])
            except (re.error, TypeError):
                self.problems.append(f"{at}/pattern: invalid value {node['pattern']!r}")

    def _array(self, node: dict[str, Any], at: str, depth: int) -> None:
        for key in ("minItems", "maxItems"):
            value = node.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                self.problems.append(f"{at}/{key}: invalid value {value!r}")
        if "items" not in node:
            self.problems.append(f"{at}: an array needs items")
        else:
            self.node(node["items"], f"{at}/items", depth)

    def _object(self, node: dict[str, Any], at: str, depth: int) -> None:
        if depth > MAX_NESTING:
            self.problems.append(f"{at}: objects nest {depth} levels; the limit is {MAX_NESTING}")
        if node.get("additionalProperties") is not False:
            self.problems.append(f"{at}: additionalProperties must be false")
        properties = node.get("properties")
        if not isinstance(properties, dict):
            self.problems.append(f"{at}: an object needs properties")
            return
        required = node.get("required")
        if not isinstance(required, list) or sorted(map(str, required)) != sorted(properties):
            self.problems.append(f"{at}: every property must be required, and only those")
        self.properties += len(properties)
        for name, sub in properties.items():
            self.chars += len(name)
            self.node(sub, f"{at}/properties/{name}", depth + 1)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _normalise(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_normalise(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
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
        if key in _DROPPED or (key == "format" and value not in STRING_FORMATS):
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
