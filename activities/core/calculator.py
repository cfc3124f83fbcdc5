"""``calculator``: a small arithmetic grammar, never Python evaluation.

Touches nothing outside the process. The expression is checked three times before any arithmetic:
a length cap (the parser itself can exhaust memory on long inputs), a character allowlist, and an
AST walk that admits only finite numbers below the magnitude limit, parentheses, unary signs and
``+ - * / // % **``. Evaluation then bounds every intermediate value: powers are estimated with
logarithms before they are computed, integers stay under ``MAX_INT_DIGITS`` digits and floats must
stay finite.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable

from pydantic import Field, field_validator

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.errors import tool_error
from toolcalls.workflows.models.call import ErrorCode

MAX_EXPRESSION_CHARS = 256
MAX_NODES = 128
MAX_EXPONENT = 10_000
MAX_INT_DIGITS = 300
"""Integers and floats must stay below ``10**MAX_INT_DIGITS`` (floats must also be finite)."""
_MAX_MAGNITUDE = 10**MAX_INT_DIGITS
_ALLOWED_CHARS = re.compile(r"[0-9eE_.+\-*/%()\s]*")

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class CalculatorArgs(ToolArgs):
    expression: str = Field(
        description=(
            "Arithmetic expression of 1-256 characters: numbers, parentheses, unary + and -, "
            "and the operators + - * / // % **."
        ),
    )

    @field_validator("expression")
    @classmethod
    def _parses(cls, value: str) -> str:
        parse(value)
        return value


class CalculatorResult(ToolResult):
    expression: str
    result: int | float


class CalculationError(ValueError):
    """The expression is not admissible, or its value is not a finite number within limits."""


def parse(expression: str) -> ast.expr:
    """Check ``expression`` against the grammar and limits; return its AST."""
    text = expression.strip()
    if not text:
        raise CalculationError("expression is empty")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculationError(
            f"expression has {len(expression)} characters; the limit is {MAX_EXPRESSION_CHARS}"
        )
    if _ALLOWED_CHARS.fullmatch(text) is None:
        char = next(c for c in text if not _ALLOWED_CHARS.fullmatch(c))
        raise CalculationError(
            f"unsupported character {char!r}; only numbers and + - * / // % ** ( )"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculationError(f"invalid expression: {exc.msg}") from None
    except (MemoryError, RecursionError, ValueError):
        raise CalculationError("invalid expression: too complex to parse") from None
    for nodes, node in enumerate(ast.walk(tree.body), start=1):
        if nodes > MAX_NODES:
            raise CalculationError(f"expression has more than {MAX_NODES} syntax nodes")
        _check_node(node)
    return tree.body


def _check_node(node: ast.AST) -> None:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CalculationError(f"unsupported constant {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise CalculationError("number is not finite")
        if abs(value) >= _MAX_MAGNITUDE:
            # Caught here rather than in evaluation so a literal like 1e308 fails when the
            # arguments are validated, with a message about the number and not a "result".
            raise CalculationError(f"number {_brief(value)} is too large")
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY and not isinstance(node.op, ast.Pow):
            raise CalculationError(f"unsupported operator {type(node.op).__name__}")
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise CalculationError(f"unsupported operator {type(node.op).__name__}")
    elif not isinstance(node, (ast.operator, ast.unaryop)):
        raise CalculationError(f"unsupported syntax: {type(node).__name__}")


def evaluate(expression: str) -> Number:
    """The value of ``expression``, or ``CalculationError``."""
    return _eval(parse(expression))


def _eval(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return _bounded(node.value)
    if isinstance(node, ast.UnaryOp):
        return _bounded(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        try:
            return _bounded(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise CalculationError("division by zero") from None
        except OverflowError:
            raise CalculationError("result is too large") from None
    raise CalculationError(f"unsupported syntax: {type(node).__name__}")


def _power(base: Number, exponent: Number) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculationError(
            f"exponent {_brief(exponent)} is out of range; the limit is ±{MAX_EXPONENT}"
        )
    if base == 0 and exponent < 0:
        raise CalculationError("division by zero")
    if base != 0 and abs(base) != 1 and math.log10(abs(base)) * exponent > MAX_INT_DIGITS:
        raise CalculationError("result is too large")
    try:
        value = base**exponent
    except OverflowError:
        raise CalculationError("result is too large") from None
    except ZeroDivisionError:
        raise CalculationError("division by zero") from None
    if isinstance(value, complex):
        raise CalculationError("result is not a real number")
    return _bounded(value)


def _brief(value: Number) -> str:
    """``value`` for an error message: a 300-digit integer is named by its length."""
    text = repr(value)
    if isinstance(value, int) and len(text) > 24:
        return f"of {len(text.lstrip('-'))} digits"
    return text


def _bounded(value: Number) -> Number:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CalculationError("result is not finite")
        if abs(value) >= _MAX_MAGNITUDE:
            raise CalculationError("result is too large")
    elif abs(value) >= _MAX_MAGNITUDE:
        raise CalculationError("result is too large")
    return value


class MathTools:
    """Pure arithmetic; no configuration, no I/O."""

    async def calculator(self, args: CalculatorArgs, call: CallContext) -> CalculatorResult:
        """Evaluate ``args.expression``."""
        try:
            value = evaluate(args.expression)
        except CalculationError as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"calculator: {exc}", fixable_args=["expression"]
            ) from None
        return CalculatorResult(expression=args.expression.strip(), result=value)
