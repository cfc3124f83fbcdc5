"""Keys, values and list limits as the spec defines them, checked when a call is planned."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.schema import strict_schema
from toolcalls.activities.storage import STORAGE_TOOLS
from toolcalls.activities.storage.settings import MAX_VALUE_BYTES_CEILING
from toolcalls.activities.storage.tools import (
    DeleteValueArgs,
    GetValueArgs,
    ListKeysArgs,
    SetValueArgs,
)
from toolcalls.activities.storage.values import (
    MAX_VALUE_DEPTH,
    ValueProblem,
    decode_value,
    encode_value,
)
from toolcalls.workflows.models.call import ErrorCode, PlanInput, SideEffect


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def plan_error(tool: str, arguments: dict[str, Any]) -> tuple[ErrorCode, str, list[str]]:
    catalog = Catalog(STORAGE_TOOLS, CatalogSettings(enabled=[s.name for s in STORAGE_TOOLS]))
    outcome = catalog.plan(
        PlanInput(tool=tool, arguments=arguments), default_ceiling(), frozenset()
    )
    assert outcome.error is not None, outcome.plan
    return outcome.error.code, outcome.error.message, outcome.error.fixable_args


def test_catalog_declares_capabilities_and_classes() -> None:
    declared = {
        spec.name: (
            tuple(spec.capabilities_for(spec.arguments.model_construct())),
            spec.side_effect,
        )
        for spec in STORAGE_TOOLS
    }
    assert declared == {
        "get_value": (("storage.read",), SideEffect.READ),
        "list_keys": (("storage.read",), SideEffect.READ),
        "set_value": (("storage.write",), SideEffect.WRITE),
        "delete_value": (("storage.write",), SideEffect.WRITE),
    }
    writes = [spec for spec in STORAGE_TOOLS if spec.side_effect is SideEffect.WRITE]
    assert all(spec.timeouts and spec.timeouts.heartbeat for spec in writes)


@pytest.mark.parametrize("model", [GetValueArgs, DeleteValueArgs])
def test_keys_are_nonblank_and_at_most_256_characters(model: type[GetValueArgs]) -> None:
    assert model(key="k" * 256).key == "k" * 256
    assert model(key=" x ").key == " x "  # used literally, never stripped
    for bad in ["", " ", "\t\n", "k" * 257, "\ud800"]:
        with pytest.raises(ValidationError):
            model(key=bad)
    assert SetValueArgs(key="é" * 256, value=1).key == "é" * 256


def test_a_blank_key_is_the_models_to_fix() -> None:
    code, message, fixable = plan_error("get_value", {"key": "   "})
    assert code is ErrorCode.INVALID_ARGUMENTS
    assert fixable == ["key"]
    assert "keys must not be blank" in message


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, [1, {"x": math.nan}]])
def test_non_finite_numbers_are_rejected(bad: Any) -> None:
    with pytest.raises(ValidationError, match="non-finite numbers"):
        SetValueArgs(key="k", value=bad)
    code, message, fixable = plan_error("set_value", {"key": "k", "value": bad})
    assert (code, fixable) == (ErrorCode.INVALID_ARGUMENTS, ["value"])
    assert "NaN, Infinity" in message


def test_a_value_nested_100k_levels_is_a_clean_error() -> None:
    deep = nested(100_000)
    with pytest.raises(ValidationError, match=f"deeper than {MAX_VALUE_DEPTH} levels"):
        SetValueArgs(key="k", value=deep)
    code, _, fixable = plan_error("set_value", {"key": "k", "value": deep})
    assert (code, fixable) == (ErrorCode.INVALID_ARGUMENTS, ["value"])
    text = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ValueProblem, match="deeper than"):
        decode_value(text)


def test_the_depth_cap_is_exact() -> None:
    assert SetValueArgs(key="k", value=nested(MAX_VALUE_DEPTH)).value == nested(MAX_VALUE_DEPTH)
    with pytest.raises(ValidationError, match="deeper than"):
        SetValueArgs(key="k", value=nested(MAX_VALUE_DEPTH + 1))
    assert decode_value(encode_value(nested(MAX_VALUE_DEPTH))) == nested(MAX_VALUE_DEPTH)
    with pytest.raises(ValueProblem, match="stored value nests deeper"):
        decode_value(json.dumps(nested(MAX_VALUE_DEPTH + 1)))


def test_values_over_the_absolute_ceiling_are_rejected_at_plan() -> None:
    fits = "x" * (MAX_VALUE_BYTES_CEILING - 2)
    assert SetValueArgs(key="k", value=json.dumps(fits)).value == fits
    code, message, fixable = plan_error("set_value", {"key": "k", "value": json.dumps(fits + "x")})
    assert (code, fixable) == (ErrorCode.INVALID_ARGUMENTS, ["value"])
    assert f"{MAX_VALUE_BYTES_CEILING + 1} bytes; the limit is {MAX_VALUE_BYTES_CEILING}" in message
    # Size counts UTF-8 bytes of the compact JSON, not characters (nor the text's escapes).
    with pytest.raises(ValidationError, match="bytes"):
        SetValueArgs(key="k", value=json.dumps("é" * (MAX_VALUE_BYTES_CEILING // 2)))


def _value_id(value: Any) -> str:
    """The value's repr, without the address a bare object's has: every xdist worker collects the
    same test ids."""
    return "object()" if type(value) is object else repr(value)


@pytest.mark.parametrize(
    "bad", [(1, 2), {1: "x"}, {"a": {2, 3}}, b"bytes", object(), ["\udcff"]], ids=_value_id
)
def test_only_json_data_is_a_value(bad: Any) -> None:
    with pytest.raises(ValidationError, match=r"not JSON data|must be strings|surrogate"):
        SetValueArgs(key="k", value=bad)


def test_json_null_is_a_value_not_a_default() -> None:
    assert SetValueArgs.model_validate({"key": "k", "value": None}).value is None
    with pytest.raises(ValidationError):
        SetValueArgs.model_validate({"key": "k"})


def test_list_limits() -> None:
    assert ListKeysArgs() == ListKeysArgs(prefix="", offset=0, limit=100)
    assert ListKeysArgs.model_validate({"prefix": None, "offset": None, "limit": None}).limit == 100
    assert ListKeysArgs(limit=1).limit == 1
    assert ListKeysArgs(limit=1000).limit == 1000
    assert ListKeysArgs(prefix=" ").prefix == " "
    for bad in [{"limit": 0}, {"limit": 1001}, {"offset": -1}, {"prefix": "p" * 257}]:
        with pytest.raises(ValidationError):
            ListKeysArgs.model_validate(bad)
    code, _, fixable = plan_error("list_keys", {"limit": 1001})
    assert (code, fixable) == (ErrorCode.INVALID_ARGUMENTS, ["limit"])


def test_schemas_are_strict() -> None:
    schema = strict_schema(SetValueArgs)
    assert schema["required"] == ["key", "value"]
    # The strict subset has no string lengths: the description says it, the plan checks it.
    assert schema["properties"]["key"] == {
        "type": "string",
        "description": "Nonblank key of at most 256 characters, used literally.",
    }
    listing = strict_schema(ListKeysArgs)["properties"]["limit"]
    assert {"maximum": 1000, "minimum": 1}.items() <= listing["anyOf"][0].items()


def plan(arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    catalog = Catalog(STORAGE_TOOLS, CatalogSettings(enabled=["set_value"]))
    outcome = catalog.plan(
        PlanInput(tool="set_value", arguments=arguments), default_ceiling(), frozenset()
    )
    assert outcome.plan is not None, outcome.error
    return outcome.plan.arguments, outcome.plan.digest


def test_the_value_is_offered_as_json_text() -> None:
    value = strict_schema(SetValueArgs)["properties"]["value"]
    assert value["type"] == "string"
    assert "JSON text" in value["description"]
    (spec,) = [s for s in STORAGE_TOOLS if s.name == "set_value"]
    assert "JSON text" in spec.description


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": [1, 2.5, null]}', {"a": [1, 2.5, None]}),
        ("[]", []),
        ("42", 42),
        ("true", True),
        ("null", None),
        ('"hi"', "hi"),
        ('"42"', "42"),
        ('  "\\u00e9"  ', "é"),
    ],
)
def test_json_text_is_decoded_at_plan(text: str, value: Any) -> None:
    assert SetValueArgs(key="k", value=text).value == value
    arguments, digest = plan({"key": "k", "value": text})
    # What the plan records validates again to the same value: a string as its JSON text, any
    # other value as itself, so the activity's digest check sees the same arguments.
    assert SetValueArgs.model_validate(arguments).value == value
    assert arguments["value"] == (
        json.dumps(value, ensure_ascii=False) if isinstance(value, str) else value
    )
    assert plan(arguments) == (arguments, digest)


def test_an_already_decoded_value_is_accepted_as_it_is() -> None:
    # Application code that sends the value itself (the spec's form) gets the same call as a
    # model that sends its JSON text, digest and all; only a string must be JSON text.
    assert plan({"key": "k", "value": {"a": 1}}) == plan({"key": "k", "value": '{"a":1}'})
    assert plan({"key": "k", "value": [1, "x"]}) == plan({"key": "k", "value": '[1, "x"]'})
    assert plan({"key": "k", "value": None}) == plan({"key": "k", "value": "null"})


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "hi",
            "is not JSON text (Expecting value: line 1 column 1 (char 0)); "
            'a string is given as JSON text too: "\\"text\\""',
        ),
        ("{'a': 1}", "is not JSON text (Expecting property name enclosed in double quotes"),
        ("[1] [2]", "is not JSON text (Extra data"),
        ("", "is not JSON text"),
        ("[NaN]", "NaN is not JSON"),
        ("-Infinity", "-Infinity is not JSON"),
        ("[" * 100_000 + "]" * 100_000, "value nests deeper than 64 levels"),
        (json.dumps(nested(MAX_VALUE_DEPTH + 1)), "value nests deeper than 64 levels"),
        ('{"a": "\\ud800"}', "surrogate"),
    ],
)
def test_text_that_is_not_json_data_is_the_models_to_fix(text: str, problem: str) -> None:
    code, message, fixable = plan_error("set_value", {"key": "k", "value": text})
    assert (code, fixable) == (ErrorCode.INVALID_ARGUMENTS, ["value"])
    assert message.startswith("set_value: invalid arguments: value: ")
    assert problem in message
