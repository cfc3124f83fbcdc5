"""``calculator``: the grammar, every rejection in SECURITY-CASES.md, limits, and the activity."""

from __future__ import annotations

import ast
import math
import operator
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TypeAlias

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from toolcalls.activities.base import CallContext
from toolcalls.activities.core.calculator import (
    MAX_EXPONENT,
    MAX_EXPRESSION_CHARS,
    MAX_INT_DIGITS,
    MAX_NODES,
    CalculationError,
    CalculatorArgs,
    CalculatorResult,
    MathTools,
    evaluate,
    parse,
)


def rejection(expression: str) -> str:
    """The ``CalculationError`` message for ``expression``; fails the test if it evaluates."""
    with pytest.raises(CalculationError) as caught:
        evaluate(expression)
    return str(caught.value)


def test_limits_are_the_specs() -> None:
    assert MAX_EXPRESSION_CHARS == 256
    assert MAX_INT_DIGITS == 300
    assert MAX_EXPONENT == 10_000
    assert MAX_NODES == 128


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("42", 42),
        ("1_000 + 1", 1001),
        ("2 + 3", 5),
        ("2 - 3", -1),
        ("6 * 7", 42),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("-7 % 3", 2),
        ("7 % -3", -2),
        ("2 ** 10", 1024),
        ("2 ** 3 ** 2", 512),
        ("-2 ** 2", -4),
        ("(-2) ** 2", 4),
        ("0 ** 0", 1),
        ("+5", 5),
        ("--5", 5),
        ("- - -5", -5),
        ("-(3 - 5)", 2),
        ("2 * 3 + 4", 10),
        ("2 * (3 + 4)", 14),
        ("(1\n+ 2)", 3),
        ("1\t+\t2", 3),
        ("10 ** 299", 10**299),
        ("9" * MAX_EXPRESSION_CHARS, int("9" * MAX_EXPRESSION_CHARS)),
        ("-(10 ** 299) * 9", -9 * 10**299),
        ("1 ** 10000", 1),
        ("(-1) ** 9999", -1),
    ],
)
def test_integer_arithmetic_is_exact_and_stays_int(expression: str, expected: int) -> None:
    value = evaluate(expression)
    assert type(value) is int
    assert value == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("(18 + 6) / 3", 8.0),
        ("4 / 2", 2.0),
        ("10 / 4", 2.5),
        ("1 / 3", 1 / 3),
        ("0.1 + 0.2", 0.30000000000000004),
        (".5 + .25", 0.75),
        ("1e3", 1000.0),
        ("1E3 + 1", 1001.0),
        ("1.5e-5 * 2", 3e-05),
        ("7.5 % 2", 1.5),
        ("7.5 // 2", 3.0),
        ("2 ** -1", 0.5),
        ("2 ** 0.5", 1.4142135623730951),
        ("10 ** 299.5", 10**299.5),
        ("2 ** -10000", 0.0),
        ("1e-300 * 1e-300", 0.0),
        ("-0.0", -0.0),
        ("1e299 * 9.99", 1e299 * 9.99),
    ],
)
def test_division_and_float_literals_give_floats(expression: str, expected: float) -> None:
    value = evaluate(expression)
    assert type(value) is float
    assert value == expected
    assert math.copysign(1.0, value) == math.copysign(1.0, expected)


def test_parse_returns_the_expression_tree() -> None:
    tree = parse("  1 + 2 * 3  ")
    assert isinstance(tree, ast.BinOp)
    assert isinstance(tree.op, ast.Add)
    assert isinstance(tree.right, ast.BinOp)
    assert isinstance(tree.right.op, ast.Mult)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('id')", "unsupported character 'i'"),
        ("(1).__class__.__bases__", "unsupported character 'c'"),
        ("[x for x in ()]", "unsupported character '['"),
        ("lambda: 1", "unsupported character 'l'"),
        ("(x := 1)", "unsupported character 'x'"),
        ("1 if 1 else 2", "unsupported character 'i'"),
        ("1j", "unsupported character 'j'"),
        ("'a' * 10**9", 'unsupported character "\'"'),
        ('"a" * 2', "unsupported character '\"'"),
        ("True", "unsupported character 'T'"),
        ("abs(-1)", "unsupported character 'a'"),
        ("1[0]", "unsupported character '['"),
        ("1, 2", "unsupported character ','"),
        ("1 < 2", "unsupported character '<'"),
        ("1 == 1", "unsupported character '='"),
        ("1 & 3", "unsupported character '&'"),
        ("1 | 2", "unsupported character '|'"),
        ("1 ^ 2", "unsupported character '^'"),
        ("~1", "unsupported character '~'"),
        ("1 @ 2", "unsupported character '@'"),
        ("0x10", "unsupported character 'x'"),
        ("0b1", "unsupported character 'b'"),
        ("1 # comment", "unsupported character '#'"),
        ("1\x00", "unsupported character '\\x00'"),
        ("\\x31", "unsupported character '\\\\'"),
        ("\u0661 + 1", "unsupported character '\u0661'"),
        ("\uff11 + 1", "unsupported character '\uff11'"),
        ("2\u00b2", "unsupported character '\u00b2'"),
        ("1 \u2212 1", "unsupported character '\u2212'"),
    ],
)
def test_characters_outside_the_grammar_are_refused(expression: str, message: str) -> None:
    assert rejection(expression).startswith(message)
    assert "only numbers and + - * / // % ** ( )" in rejection(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("e", "unsupported syntax: Name"),
        ("_", "unsupported syntax: Name"),
        ("(1).e", "unsupported syntax: Attribute"),
        ("_._", "unsupported syntax: Attribute"),
        ("(1)._e_", "unsupported syntax: Attribute"),
        ("e(1)", "unsupported syntax: Call"),
        ("(1)(2)", "unsupported syntax: Call"),
        ("e(*e)", "unsupported syntax: Call"),
        ("e(**e)", "unsupported syntax: Call"),
        ("()", "unsupported syntax: Tuple"),
        ("...", "unsupported constant Ellipsis"),
        ("1 + ...", "unsupported constant Ellipsis"),
    ],
)
def test_names_attributes_calls_and_other_nodes_are_refused(expression: str, message: str) -> None:
    assert rejection(expression) == message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 +", "invalid expression: invalid syntax"),
        ("1 2", "invalid expression: invalid syntax"),
        ("*e", "invalid expression: "),
        ("1\n+ 2", "invalid expression: invalid syntax"),
        ("((", "invalid expression: '(' was never closed"),
        ("1)", "invalid expression: unmatched ')'"),
        ("1e", "invalid expression: invalid decimal literal"),
        ("1__0", "invalid expression: invalid decimal literal"),
        ("01", "invalid expression: leading zeros"),
        ("1 +\u00a01", "invalid expression: invalid non-printable character U+00A0"),
        ("1\u2028+ 1", "invalid expression: invalid non-printable character U+2028"),
        ("1\x0b+ 1", "invalid expression: invalid non-printable character U+000B"),
    ],
)
def test_malformed_input_is_a_clean_error(expression: str, message: str) -> None:
    assert rejection(expression).startswith(message)


@pytest.mark.parametrize("expression", ["", " ", "  \t\n\r  ", "\u3000"])
def test_empty_or_blank_expression(expression: str) -> None:
    assert rejection(expression) == "expression is empty"


def test_length_limit_is_256_characters() -> None:
    at_limit = "1" + "+1" * 21 + " " * (MAX_EXPRESSION_CHARS - 43)
    assert len(at_limit) == MAX_EXPRESSION_CHARS
    assert evaluate(at_limit) == 22
    assert rejection(at_limit + " ") == "expression has 257 characters; the limit is 256"
    assert rejection("9" * 257) == "expression has 257 characters; the limit is 256"


def test_201_nested_parentheses_are_refused_by_the_length_cap() -> None:
    expression = "(" * 201 + "1" + ")" * 201
    assert rejection(expression) == "expression has 403 characters; the limit is 256"
    deepest = "(" * 127 + "1" + ")" * 127
    assert evaluate(deepest) == 1


def test_a_wall_of_minus_signs_is_refused_before_parsing() -> None:
    started = time.perf_counter()
    assert rejection("-" * 100_000 + "1") == "expression has 100001 characters; the limit is 256"
    assert rejection("-" * 10_000_000 + "1").startswith("expression has 10000001 characters")
    assert time.perf_counter() - started < 1.0


def test_syntax_node_limit() -> None:
    # n terms of ``1+1+...`` are n constants, n-1 BinOp and n-1 Add nodes: 3n - 2.
    assert evaluate("+".join(["1"] * 43)) == 43
    assert rejection("+".join(["1"] * 44)) == "expression has more than 128 syntax nodes"
    assert rejection("-" * 255 + "1") == "expression has more than 128 syntax nodes"


def test_power_tower_is_refused_immediately() -> None:
    started = time.perf_counter()
    assert rejection("9**9**9") == "exponent 387420489 is out of range; the limit is ±10000"
    assert rejection("2**2**2**2**2") == "exponent 65536 is out of range; the limit is ±10000"
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("2 ** 10001", "exponent 10001 is out of range; the limit is ±10000"),
        ("0 ** -10001", "exponent -10001 is out of range; the limit is ±10000"),
        ("2.0 ** 10000.5", "exponent 10000.5 is out of range; the limit is ±10000"),
        ("2 ** 1e299", "exponent 1e+299 is out of range; the limit is ±10000"),
        ("2 ** (10 ** 299)", "exponent of 300 digits is out of range; the limit is ±10000"),
        ("2 ** -(10 ** 299)", "exponent of 300 digits is out of range; the limit is ±10000"),
    ],
)
def test_exponent_limit_messages_stay_short(expression: str, message: str) -> None:
    assert rejection(expression) == message


@pytest.mark.parametrize(
    "expression",
    [
        "10**5000",
        "10 ** 300",
        "2 ** 9999",
        "1.5 ** 5000",
        "(-10) ** 301",
        "0.5 ** -10000",
        "1e-300 ** -2",
        "(-0.5) ** -1000.5",
        "10 ** 299 * 10",
        "-(10 ** 299) * 10",
        "1e299 * 10",
        "1e299 / 0.1",
    ],
)
def test_magnitude_limit(expression: str) -> None:
    assert rejection(expression) == "result is too large"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1e308*10", "number 1e+308 is too large"),
        ("1e300", "number 1e+300 is too large"),
        ("-1.7e308", "number 1.7e+308 is too large"),
        ("1e309", "number is not finite"),
        ("1e999 - 1e999", "number is not finite"),
        ("1e299 * 1e299", "result is not finite"),
        ("10 ** 299 // 1e-10", "result is not finite"),
        ("(10 ** 299) / 1e-299", "result is not finite"),
    ],
)
def test_infinite_values_are_refused(expression: str, message: str) -> None:
    assert rejection(expression) == message


@pytest.mark.parametrize(
    "expression", ["(-8)**(1/3)", "(-1) ** 0.5", "(-2) ** -0.5", "(-8.0) ** 1.5"]
)
def test_complex_results_are_refused(expression: str) -> None:
    assert rejection(expression) == "result is not a real number"


@pytest.mark.parametrize(
    "expression",
    [
        "1/0",
        "1 % 0",
        "1 // 0",
        "0.0 % 0",
        "1 // (2 - 2)",
        "1 / -0.0",
        "0 ** -1",
        "0.0 ** -0.5",
        "(-0.0) ** -1",
    ],
)
def test_division_by_zero_is_a_clean_error(expression: str) -> None:
    assert rejection(expression) == "division by zero"


def test_args_validate_the_expression_when_built() -> None:
    assert CalculatorArgs(expression=" 1 + 2 ").expression == " 1 + 2 "
    for expression, message in [
        ("__import__('os').system('id')", "unsupported character 'i'"),
        ("", "expression is empty"),
        ("1" * 257, "expression has 257 characters; the limit is 256"),
        ("1e309", "number is not finite"),
        ("e", "unsupported syntax: Name"),
    ]:
        with pytest.raises(ValidationError) as caught:
            CalculatorArgs(expression=expression)
        (error,) = caught.value.errors()
        assert error["loc"] == ("expression",)
        assert error["type"] == "value_error"
        assert message in error["msg"]


def test_args_model_is_closed() -> None:
    with pytest.raises(ValidationError, match="expression"):
        CalculatorArgs.model_validate({"expression": None})
    with pytest.raises(ValidationError, match="expression"):
        CalculatorArgs.model_validate({})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        CalculatorArgs.model_validate({"expression": "1", "mode": "python"})
    with pytest.raises(ValidationError, match="valid string"):
        CalculatorArgs.model_validate({"expression": 12})


async def test_activity_returns_the_trimmed_expression_and_exact_result(call: CallContext) -> None:
    tools = MathTools()
    result = await tools.calculator(CalculatorArgs(expression="  (18 + 6) / 3\n"), call)
    assert result == CalculatorResult(expression="(18 + 6) / 3", result=8.0)
    assert type(result.result) is float

    power = await tools.calculator(CalculatorArgs(expression="2 ** 100"), call)
    assert power.result == 2**100
    assert type(power.result) is int
    assert power.model_dump(mode="json") == {"expression": "2 ** 100", "result": 2**100}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1/0", "calculator: division by zero"),
        ("1 % 0", "calculator: division by zero"),
        ("10**5000", "calculator: result is too large"),
        ("9**9**9", "calculator: exponent 387420489 is out of range; the limit is ±10000"),
        ("(-8)**(1/3)", "calculator: result is not a real number"),
        ("1e299 * 1e299", "calculator: result is not finite"),
    ],
)
async def test_activity_maps_evaluation_errors_to_a_fixable_tool_error(
    expression: str, message: str, call: CallContext
) -> None:
    args = CalculatorArgs(expression=expression)
    with pytest.raises(ApplicationError) as caught:
        await MathTools().calculator(args, call)
    error = caught.value
    assert error.type == "execution_failed"
    assert error.non_retryable is True
    assert error.message == message
    assert error.details[0]["fixable_args"] == ["expression"]
    assert error.__cause__ is None


async def test_activity_rechecks_arguments_that_skipped_validation(call: CallContext) -> None:
    args = CalculatorArgs.model_construct(expression="__import__('os').system('id')")
    with pytest.raises(ApplicationError) as caught:
        await MathTools().calculator(args, call)
    assert caught.value.type == "execution_failed"
    assert caught.value.message.startswith("calculator: unsupported character 'i'")
    assert caught.value.details[0]["fixable_args"] == ["expression"]


_OPERATORS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
}
IntTree: TypeAlias = int | tuple[str, "IntTree", "IntTree"]


def _render(tree: IntTree) -> str:
    if isinstance(tree, int):
        return f"({tree})" if tree < 0 else str(tree)
    symbol, left, right = tree
    return f"({_render(left)} {symbol} {_render(right)})"


def _value(tree: IntTree) -> int:
    if isinstance(tree, int):
        return tree
    symbol, left, right = tree
    return _OPERATORS[symbol](_value(left), _value(right))


int_trees: st.SearchStrategy[IntTree] = st.recursive(
    st.integers(min_value=-(10**6), max_value=10**6),
    lambda children: st.tuples(st.sampled_from(sorted(_OPERATORS)), children, children),
    max_leaves=8,
)


@settings(max_examples=300, deadline=timedelta(seconds=1), database=None)
@given(int_trees)
def test_integer_trees_match_python_arithmetic(tree: IntTree) -> None:
    expression = _render(tree)
    assert len(expression) <= MAX_EXPRESSION_CHARS
    value = evaluate(expression)
    assert type(value) is int
    assert value == _value(tree)


@settings(max_examples=300, deadline=timedelta(seconds=1), database=None)
@given(
    st.integers(min_value=-1000, max_value=1000),
    st.sampled_from(["/", "//", "%"]),
    st.integers(min_value=-1000, max_value=1000),
)
def test_division_operators_match_python(left: int, symbol: str, right: int) -> None:
    expression = f"({left}) {symbol} ({right})"
    function = {"/": operator.truediv, "//": operator.floordiv, "%": operator.mod}[symbol]
    if right == 0:
        assert rejection(expression) == "division by zero"
        return
    expected = function(left, right)
    value = evaluate(expression)
    assert type(value) is type(expected)
    assert value == expected


def _outcome(text: str) -> int | float | CalculationError:
    """What ``evaluate`` makes of ``text``; any other exception escapes and fails the test."""
    try:
        return evaluate(text)
    except CalculationError as error:
        return error


_MESSAGES = (
    "expression is empty",
    "expression has ",
    "unsupported character ",
    "invalid expression: ",
    "unsupported syntax: ",
    "unsupported constant ",
    "number ",
    "exponent ",
    "result is ",
    "division by zero",
)
_TOKENS = [*"0123456789eE_.+-*/%() ", "**", "//", "1e", "0.", "99", "1e300", "10**299", "9**9"]
grammar_soup = st.lists(st.sampled_from(_TOKENS), max_size=100).map("".join)


@settings(max_examples=500, deadline=timedelta(seconds=1), database=None)
@given(
    st.one_of(
        grammar_soup,
        st.text(alphabet="0123456789eE_.+-*/%() \t\n", max_size=MAX_EXPRESSION_CHARS),
        st.text(max_size=MAX_EXPRESSION_CHARS),
    ).filter(lambda text: len(text) <= MAX_EXPRESSION_CHARS)
)
def test_any_short_string_is_a_finite_number_or_a_calculation_error(text: str) -> None:
    value = _outcome(text)
    if isinstance(value, CalculationError):
        assert str(value).startswith(_MESSAGES)
        assert len(str(value)) <= 200
        return
    assert type(value) in (int, float)
    assert math.isfinite(value)
    assert abs(value) < 10**MAX_INT_DIGITS
