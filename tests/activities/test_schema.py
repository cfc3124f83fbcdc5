"""Strict model-facing schemas, and ``ToolArgs`` turning their ``null`` back into defaults."""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tests.support.tools import PROBE_TOOLS
from toolcalls.activities.base import ToolArgs
from toolcalls.activities.core.clock import DateTimeArgs
from toolcalls.activities.families import BUILTIN_TOOLS
from toolcalls.activities.schema import SchemaError, strict_schema


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    """A point."""

    x: int
    y: int = 0


class Shape(ToolArgs):
    name: str = Field(description="What to call it.")
    sides: int = Field(default=3, ge=3, description="How many sides.")
    scale: float = 1.5
    label: str | None = None
    tag: str | None = Field(default="t", description="A tag.")
    color: Color = Color.RED
    origin: Point = Field(description="Where it starts.")
    points: list[Point] = Field(default_factory=list)


class Node(BaseModel):
    value: int
    children: list[Node] = Field(default_factory=list)


class Wrapper(ToolArgs):
    root: Node


class Ping(BaseModel):
    pong: Pong | None = None


class Pong(BaseModel):
    ping: Ping | None = None


class Mutual(ToolArgs):
    start: Ping


class Keywords(ToolArgs):
    """Fields named like schema keywords are still fields."""

    title: str
    default: int = 2
    then: str = Field(default="x", examples=[{"title": "kept", "not": 1}])


class Inner(ToolArgs):
    a: int
    b: int = 7
    c: list[str] = Field(default_factory=lambda: ["c"])


class Outer(ToolArgs):
    inner: Inner
    inners: list[Inner] = Field(default_factory=list)


def walk(node: Any) -> list[dict[str, Any]]:
    """Every schema object in ``node``, including ``node`` itself."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for key, value in node.items():
            if key == "properties":
                for prop in value.values():
                    found += walk(prop)
            elif key not in ("enum", "const", "examples"):
                found += walk(value)
    elif isinstance(node, list):
        for item in node:
            found += walk(item)
    return found


def test_objects_are_closed_and_every_property_is_required() -> None:
    schema = strict_schema(Shape)
    objects = [node for node in walk(schema) if node.get("type") == "object"]
    assert len(objects) == 3  # Shape, origin, points' items
    for node in objects:
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
    assert list(schema["properties"]) == [
        "name",
        "sides",
        "scale",
        "label",
        "tag",
        "color",
        "origin",
        "points",
    ]


def test_titles_defaults_and_refs_are_gone() -> None:
    schema = strict_schema(Shape)
    text = json.dumps(schema)
    assert "$ref" not in text
    assert "$defs" not in text
    for node in walk(schema):
        assert "title" not in node
        assert "default" not in node


def test_required_properties_keep_their_shape() -> None:
    props = strict_schema(Shape)["properties"]
    assert props["name"] == {"type": "string", "description": "What to call it."}


def test_defaulted_properties_are_nullable_with_a_note() -> None:
    props = strict_schema(Shape)["properties"]
    assert props["sides"] == {
        "anyOf": [{"type": "integer", "minimum": 3}, {"type": "null"}],
        "description": "How many sides. null means the default, 3.",
    }
    assert props["scale"] == {
        "anyOf": [{"type": "number"}, {"type": "null"}],
        "description": "Null means the default, 1.5.",
    }
    # Already nullable: not wrapped twice; a default of None needs no note.
    assert props["label"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["tag"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": 'A tag. null means the default, "t".',
    }
    assert props["color"] == {
        "anyOf": [{"enum": ["red", "blue"], "type": "string"}, {"type": "null"}],
        "description": 'Null means the default, "red".',
    }


def test_nested_models_are_inlined_with_their_description() -> None:
    props = strict_schema(Shape)["properties"]
    point = {
        "type": "object",
        "properties": {
            "x": {"type": "integer"},
            "y": {
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "description": "Null means the default, 0.",
            },
        },
        "required": ["x", "y"],
        "additionalProperties": False,
    }
    origin = props["origin"]
    assert origin["description"] == "Where it starts."
    assert {k: v for k, v in origin.items() if k != "description"} == point
    items = props["points"]["anyOf"][0]["items"]
    assert {k: v for k, v in items.items() if k != "description"} == point
    assert props["points"]["anyOf"][1] == {"type": "null"}


def test_fields_named_like_keywords_are_kept() -> None:
    schema = strict_schema(Keywords)
    assert list(schema["properties"]) == ["title", "default", "then"]
    assert schema["required"] == ["title", "default", "then"]
    assert schema["properties"]["title"] == {"type": "string"}
    # Examples are data the strict subset has no keyword for: left out, keyword-like keys and all.
    assert schema["properties"]["then"]["anyOf"][0] == {"type": "string"}


@pytest.mark.parametrize("model", [Wrapper, Node, Mutual])
def test_recursive_models_are_refused(model: type[BaseModel]) -> None:
    with pytest.raises(SchemaError, match=r"recursive schema '(Node|Ping|Pong)'"):
        strict_schema(model)


def test_the_same_model_twice_is_not_recursion() -> None:
    class Segment(ToolArgs):
        start: Point
        end: Point

    schema = strict_schema(Segment)
    assert schema["properties"]["start"] == schema["properties"]["end"]
    assert schema["properties"]["start"]["properties"]["x"] == {"type": "integer"}


@pytest.mark.parametrize(
    "keyword", ["allOf", "not", "if", "then", "else", "patternProperties", "$dynamicRef"]
)
def test_unsupported_keywords_are_refused(keyword: str) -> None:
    class Odd(ToolArgs):
        value: int = Field(json_schema_extra={keyword: {"type": "integer"}})

    with pytest.raises(SchemaError, match=f"unsupported schema keyword '{re.escape(keyword)}'"):
        strict_schema(Odd)


def test_unresolved_reference_is_refused() -> None:
    class Dangling(ToolArgs):
        value: int

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            # pydantic never emits a dangling reference; a hand-written schema might.
            return {"type": "object", "properties": {"value": {"$ref": "#/$defs/Missing"}}}

    with pytest.raises(SchemaError, match="unresolved reference '#/\\$defs/Missing'"):
        strict_schema(Dangling)


def test_schema_error_is_a_value_error() -> None:
    assert issubclass(SchemaError, ValueError)


def test_null_means_the_default() -> None:
    shape = Shape.model_validate(
        {
            "name": "tri",
            "sides": None,
            "scale": None,
            "label": None,
            "tag": None,
            "color": None,
            "origin": {"x": 1},
            "points": None,
        }
    )
    assert (shape.sides, shape.scale, shape.label, shape.tag) == (3, 1.5, None, "t")
    assert shape.color is Color.RED
    assert shape.points == []
    assert DateTimeArgs.model_validate({"timezone": None}).timezone == "UTC"


def test_null_means_the_default_in_nested_tool_args() -> None:
    outer = Outer.model_validate({"inner": {"a": 1, "b": None, "c": None}, "inners": None})
    assert outer.model_dump() == {"inner": {"a": 1, "b": 7, "c": ["c"]}, "inners": []}
    listed = Outer.model_validate({"inner": {"a": 1}, "inners": [{"a": 2, "b": None, "c": None}]})
    assert listed.inners[0].b == 7
    assert listed.inners[0].c == ["c"]


def test_null_for_a_required_field_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Shape.model_validate({"name": None, "origin": {"x": 1}})
    assert [err["loc"] for err in caught.value.errors()] == [("name",)]


def test_null_keeps_meaning_none_where_none_is_the_default() -> None:
    class Maybe(ToolArgs):
        note: str | None = None

    assert Maybe.model_validate({"note": None}).note is None
    assert Maybe.model_validate({"note": "n"}).note == "n"


@pytest.mark.parametrize(
    ("data", "loc"),
    [
        ({"name": "a", "origin": {"x": 1}, "extra": 1}, ("extra",)),
        ({"name": "a", "origin": {"x": 1}, "extra": None}, ("extra",)),
    ],
)
def test_extra_keys_are_refused(data: dict[str, Any], loc: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as caught:
        Shape.model_validate(data)
    assert [(err["loc"], err["type"]) for err in caught.value.errors()] == [
        (loc, "extra_forbidden")
    ]


def test_extra_keys_in_nested_tool_args_are_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate({"inner": {"a": 1, "zzz": 2}})
    assert [(err["loc"], err["type"]) for err in caught.value.errors()] == [
        (("inner", "zzz"), "extra_forbidden")
    ]


def test_tool_args_are_frozen() -> None:
    args = DateTimeArgs(timezone="UTC")
    with pytest.raises(ValidationError):
        args.timezone = "Europe/Zurich"  # type: ignore[misc]


# A structural check of JSON Schema draft 2020-12 (no jsonschema package here): every keyword is
# one the draft defines, and its value has the shape the draft requires.
TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
SCHEMA_MAP = {"properties", "patternProperties", "$defs", "dependentSchemas"}
SCHEMA_LIST = {"allOf", "anyOf", "oneOf", "prefixItems"}
SCHEMA_ONE = {
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
}
NON_NEGATIVE = {
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
}
NUMBERS = {"maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"}
STRINGS = {
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$comment",
    "title",
    "description",
    "format",
    "contentEncoding",
    "contentMediaType",
}
BOOLEANS = {"uniqueItems", "deprecated", "readOnly", "writeOnly"}
OTHER = {"type", "enum", "const", "multipleOf", "pattern", "required", "dependentRequired"}
OTHER |= {"default", "examples", "$vocabulary"}
KEYWORDS = SCHEMA_MAP | SCHEMA_LIST | SCHEMA_ONE | NON_NEGATIVE | NUMBERS | STRINGS | BOOLEANS
KEYWORDS |= OTHER


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unique_strings(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(v, str) for v in value)
        and len(set(value)) == len(value)
    )


def draft_2020_12_problems(schema: Any, at: str = "#") -> list[str]:
    """What makes ``schema`` not a draft 2020-12 schema; empty when it is one."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{at}: a schema is an object or a boolean"]
    problems = [f"{at}: unknown keyword {k!r}" for k in schema if k not in KEYWORDS]
    for key, value in schema.items():
        where = f"{at}/{key}"
        ok = True
        if key in SCHEMA_MAP:
            ok = isinstance(value, dict)
            for name, sub in value.items() if ok else ():
                problems += draft_2020_12_problems(sub, f"{where}/{name}")
        elif key in SCHEMA_LIST:
            ok = isinstance(value, list) and bool(value)
            for i, sub in enumerate(value) if ok else ():
                problems += draft_2020_12_problems(sub, f"{where}/{i}")
        elif key in SCHEMA_ONE:
            problems += draft_2020_12_problems(value, where)
        elif key in NON_NEGATIVE:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        elif key in NUMBERS:
            ok = _is_number(value)
        elif key == "multipleOf":
            ok = _is_number(value) and value > 0
        elif key in STRINGS:
            ok = isinstance(value, str)
        elif key in BOOLEANS:
            ok = isinstance(value, bool)
        elif key == "type":
            names = value if isinstance(value, list) else [value]
            ok = bool(names) and _unique_strings(names) and set(names) <= TYPES
        elif key == "enum":
            ok = isinstance(value, list) and bool(value)
            ok = ok and len({json.dumps(v, sort_keys=True) for v in value}) == len(value)
        elif key == "required":
            ok = _unique_strings(value)
        elif key == "dependentRequired":
            ok = isinstance(value, dict) and all(_unique_strings(v) for v in value.values())
        elif key == "pattern":
            ok = isinstance(value, str)
            try:
                re.compile(value)
            except (re.error, TypeError):
                ok = False
        elif key == "examples":
            ok = isinstance(value, list)
        if not ok:
            problems.append(f"{where}: invalid value {value!r}")
    return problems


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "str"},
        {"type": []},
        {"type": ["string", "string"]},
        {"required": "a"},
        {"required": ["a", "a"]},
        {"minLength": -1},
        {"maxItems": 1.5},
        {"anyOf": []},
        {"properties": {"a": 5}},
        {"items": {"type": "nope"}},
        {"enum": []},
        {"pattern": "("},
        {"additionalProperties": "no"},
        {"nullable": True},
        {"multipleOf": 0},
        {"uniqueItems": "yes"},
    ],
)
def test_the_draft_check_catches_broken_schemas(schema: dict[str, Any]) -> None:
    assert draft_2020_12_problems(schema)


@pytest.mark.parametrize("spec", [*BUILTIN_TOOLS, *PROBE_TOOLS], ids=lambda spec: spec.name)
def test_every_tool_schema_is_strict_draft_2020_12(spec: Any) -> None:
    schema = strict_schema(spec.arguments)
    assert draft_2020_12_problems(schema) == []
    assert schema["type"] == "object"
    assert "$ref" not in json.dumps(schema)
    for node in walk(schema):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
    # Every property the model accepts is in the schema, and nothing else.
    assert set(schema["properties"]) == set(spec.arguments.model_fields)


def test_strict_schema_of_a_model_with_fields_named_like_metadata_is_valid() -> None:
    class Event(ToolArgs):
        model_config = ConfigDict(title="ignored")

        title: str
        description: str = ""

    schema = strict_schema(Event)
    assert draft_2020_12_problems(schema) == []
    assert schema["required"] == ["title", "description"]
