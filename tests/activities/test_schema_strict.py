"""The strict-schema rules (OpenAI's documented subset for strict function calling) and the
catalog refusing a tool whose arguments break them."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from pydantic import Field, JsonValue

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.catalog import Catalog, CatalogError, CatalogSettings
from toolcalls.activities.schema import (
    MAX_ENUM_VALUES,
    MAX_NESTING,
    MAX_PROPERTIES,
    SchemaError,
    strict_problems,
    strict_schema,
)
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import SideEffect


def closed(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


STRING = {"type": "string"}

# The guide's own examples: each is accepted as it stands.
ACCEPTED: list[dict[str, Any]] = [
    closed(
        location={"type": "string", "description": "The location"},
        unit={"type": ["string", "null"], "enum": ["F", "C"]},
        value={"type": "number", "minimum": -130, "maximum": 130},
    ),
    closed(
        name={"type": "string", "pattern": "^@[a-zA-Z0-9_]+$"},
        email={"type": "string", "format": "email"},
        when={"type": "string", "format": "date-time"},
        n={"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10, "multipleOf": 2},
        tags={"type": "array", "items": STRING, "minItems": 1, "maxItems": 4},
        kind={"type": "string", "const": "x"},
    ),
    closed(item={"anyOf": [closed(name=STRING), closed(number=STRING), {"type": "null"}]}),
    {
        **closed(steps={"type": "array", "items": {"$ref": "#/$defs/step"}}, final=STRING),
        "$defs": {"step": closed(explanation=STRING, output=STRING)},
    },
    {
        **closed(linked={"$ref": "#/$defs/node"}),
        "$defs": {
            "node": closed(
                value={"type": "number"},
                next={"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
            )
        },
    },
    closed(children={"type": "array", "items": {"$ref": "#"}}, label=STRING),
    closed(),
]


@pytest.mark.parametrize("schema", ACCEPTED)
def test_the_documented_shapes_pass(schema: dict[str, Any]) -> None:
    assert strict_problems(schema) == []


REFUSED: list[tuple[Any, str]] = [
    ([], "#: the schema must be an object"),
    (STRING, '#: the root must have type "object"'),
    ({"anyOf": [closed(), closed()]}, "#: the root must not be anyOf"),
    (closed(value={}), "#/properties/value: no type"),
    (closed(value={"description": "anything"}), "#/properties/value: no type"),
    (closed(value={"enum": [1, "a"]}), "#/properties/value: no type"),
    (closed(value={"type": "str"}), "#/properties/value/type: invalid value 'str'"),
    (closed(value={"type": []}), "#/properties/value/type: invalid value []"),
    (closed(value={"anyOf": [STRING, {}]}), "#/properties/value/anyOf/1: no type"),
    (closed(value={"anyOf": []}), "#/properties/value/anyOf: must be a nonempty list"),
    (
        closed(q={"type": "object", "additionalProperties": STRING}),
        "#/properties/q: additionalProperties must be false",
    ),
    (closed(q={"type": "object", "additionalProperties": False}), "an object needs properties"),
    (
        {"type": "object", "properties": {"a": STRING}, "additionalProperties": False},
        "#: every property must be required, and only those",
    ),
    (
        {**closed(a=STRING), "required": ["a", "b"]},
        "#: every property must be required, and only those",
    ),
    ({**closed(a=STRING), "additionalProperties": True}, "#: additionalProperties must be false"),
    (
        closed(a={"type": "string", "default": "x"}),
        "#/properties/a: unsupported schema keyword 'default'",
    ),
    (closed(a={"type": "string", "minLength": 1}), "unsupported schema keyword 'minLength'"),
    (closed(a={"type": "string", "maxLength": 9}), "unsupported schema keyword 'maxLength'"),
    (closed(a={"type": "string", "format": "uri"}), "#/properties/a/format: 'uri' is not a"),
    (closed(a={"type": "string", "pattern": "("}), "#/properties/a/pattern: invalid value '('"),
    (closed(a={"type": "integer", "minLength": 1}), "unsupported schema keyword 'minLength'"),
    (closed(a={"type": "string", "minimum": 1}), "unsupported schema keyword 'minimum'"),
    (closed(a={"type": "integer", "multipleOf": 0}), "#/properties/a/multipleOf: invalid value 0"),
    (closed(a={"type": "number", "maximum": "9"}), "#/properties/a/maximum: invalid value '9'"),
    (closed(a={"type": "array", "items": STRING, "uniqueItems": True}), "keyword 'uniqueItems'"),
    (closed(a={"type": "array"}), "#/properties/a: an array needs items"),
    (closed(a={"type": "array", "items": STRING, "minItems": -1}), "minItems: invalid value -1"),
    (closed(a={"type": "array", "prefixItems": [STRING], "items": STRING}), "'prefixItems'"),
    (closed(a={"oneOf": [STRING]}), "unsupported schema keyword 'oneOf'"),
    (closed(a={"allOf": [STRING]}), "unsupported schema keyword 'allOf'"),
    (closed(a={"type": "string", "not": STRING}), "unsupported schema keyword 'not'"),
    (closed(a={"type": "string", "examples": ["x"]}), "unsupported schema keyword 'examples'"),
    (closed(a={"type": "string", "description": 5}), "#/properties/a/description: must be"),
    (
        closed(
            a={
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": False,
                "patternProperties": {},
            }
        ),
        "unsupported schema keyword 'patternProperties'",
    ),
    (closed(a={"$ref": "#/$defs/missing"}), "'#/$defs/missing' is neither '#' nor one of $defs"),
    (closed(a={"$ref": "#/definitions/x"}), "is neither '#' nor one of $defs"),
    ({**closed(), "$defs": {"x": {}}}, "#/$defs/x: no type"),
    (
        closed(a={"type": "string", "$defs": {}}),
        "#/properties/a: unsupported schema keyword '$defs'",
    ),
    (closed(a={"type": "string", "enum": []}), "#/properties/a/enum: must be a nonempty list"),
]


@pytest.mark.parametrize(("schema", "problem"), REFUSED)
def test_each_rule_is_checked(schema: Any, problem: str) -> None:
    problems = strict_problems(schema)
    assert any(problem in found for found in problems), problems


def nested(levels: int) -> dict[str, Any]:
    schema = closed()
    for _ in range(levels - 1):
        schema = closed(inner=schema)
    return schema


def test_the_documented_limits_are_checked() -> None:
    assert strict_problems(nested(MAX_NESTING)) == []
    assert strict_problems(nested(MAX_NESTING + 1)) == [
        f"#{'/properties/inner' * MAX_NESTING}: objects nest {MAX_NESTING + 1} levels; "
        f"the limit is {MAX_NESTING}"
    ]
    many = closed(**{f"p{i}": STRING for i in range(MAX_PROPERTIES)})
    assert strict_problems(many) == []
    many["properties"]["one_more"] = STRING
    many["required"].append("one_more")
    assert strict_problems(many) == [
        f"#: {MAX_PROPERTIES + 1} object properties; the limit is {MAX_PROPERTIES}"
    ]
    enums = closed(a={"type": "integer", "enum": list(range(MAX_ENUM_VALUES))})
    assert strict_problems(enums) == []
    enums["properties"]["b"] = {"type": "integer", "enum": [0]}
    enums["required"].append("b")
    assert strict_problems(enums) == [
        f"#: {MAX_ENUM_VALUES + 1} enum values; the limit is {MAX_ENUM_VALUES}"
    ]
    wide = closed(a={"type": "string", "enum": [f"{i:060d}" for i in range(251)]})
    assert "over 250 values, the limit is 15000 characters" in strict_problems(wide)[0]
    long = closed(a={"type": "string", "const": "x" * 120_000})
    assert strict_problems(long) == [
        "#: 120001 characters of names, enum and const values; the limit is 120000"
    ]


def test_every_problem_is_reported_with_where_it_is() -> None:
    schema = closed(a={}, b=closed(c={"type": "string", "default": "x"}))
    schema["properties"]["b"]["additionalProperties"] = True
    assert strict_problems(schema) == [
        "#/properties/a: no type",
        "#/properties/b: additionalProperties must be false",
        "#/properties/b/properties/c: unsupported schema keyword 'default'",
    ]


def test_the_check_does_not_change_the_schema() -> None:
    schema = ACCEPTED[3]
    before = copy.deepcopy(schema)
    strict_problems(schema)
    assert schema == before


class Lengths(ToolArgs):
    name: str = Field(min_length=1, max_length=10, pattern="^[a-z]+$", description="A name.")
    site: str = Field(json_schema_extra={"format": "uri"})
    day: str = Field(json_schema_extra={"format": "date"})
    tags: list[str] = Field(min_length=1, max_length=3, examples=[["a"]])


def test_the_normaliser_leaves_out_what_the_subset_lacks_and_keeps_the_rest() -> None:
    props = strict_schema(Lengths)["properties"]
    # Lengths, unknown formats and examples are the arguments model's to check, at plan.
    assert props["name"] == {"type": "string", "pattern": "^[a-z]+$", "description": "A name."}
    assert props["site"] == {"type": "string"}
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "minItems": 1,
        "maxItems": 3,
    }


class AnyValue(ToolArgs):
    value: JsonValue


class OpenMap(ToolArgs):
    query: dict[str, str] = Field(default_factory=dict)


class AnyList(ToolArgs):
    items: list[Any]


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        (AnyValue, "#/properties/value: no type"),
        (OpenMap, "#/properties/query/anyOf/0: additionalProperties must be false"),
        (AnyList, "#/properties/items/items: no type"),
    ],
)
def test_models_without_a_strict_schema_are_refused(model: type[ToolArgs], problem: str) -> None:
    with pytest.raises(SchemaError) as caught:
        strict_schema(model)
    assert problem in str(caught.value)


class AnyTools:
    async def probe_any(self, args: AnyValue, call: CallContext) -> ToolResult:
        return ToolResult()


def test_the_catalog_refuses_a_tool_without_a_strict_schema_when_built() -> None:
    spec = ToolSpec(
        name="probe_any",
        description="Takes anything.",
        arguments=AnyValue,
        result=ToolResult,
        side_effect=SideEffect.READ,
        capabilities=("network.read",),
        timeouts=Timeouts(start_to_close=timedelta(seconds=5)),
        implementation=AnyTools,
    )
    with pytest.raises(CatalogError) as caught:
        Catalog([spec], CatalogSettings(enabled=[]))
    assert str(caught.value) == (
        "probe_any: arguments have no strict schema: #/properties/value: no type"
    )
