"""The core tools: ``calculator``, ``current_datetime`` and ``ask_user``.

They need no configuration and touch nothing outside the worker's memory: arithmetic, the clock,
and a question the workflow itself asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from toolcalls.activities.core.calculator import CalculatorArgs, CalculatorResult, MathTools
from toolcalls.activities.core.clock import ClockTools, DateTimeArgs, DateTimeResult
from toolcalls.activities.core.questions import AskUserArgs
from toolcalls.activities.family import Family, NoSettings, Resources
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import (
    SideEffect,
)
from toolcalls.workflows.models.question import (
    AskUserOutput,
)

CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="calculator",
        description=(
            "Evaluate an arithmetic expression exactly: numbers, parentheses, unary signs and "
            "+ - * / // % **. No names, functions or variables."
        ),
        arguments=CalculatorArgs,
        result=CalculatorResult,
        side_effect=SideEffect.PURE,
        capabilities=(),
        timeouts=Timeouts(start_to_close=timedelta(seconds=5)),
        implementation=MathTools,
    ),
    ToolSpec(
        name="current_datetime",
        description="The current date and time in an IANA timezone (default UTC).",
        arguments=DateTimeArgs,
        result=DateTimeResult,
        side_effect=SideEffect.PURE,
        capabilities=(),
        timeouts=Timeouts(start_to_close=timedelta(seconds=5)),
        implementation=ClockTools,
    ),
    ToolSpec(
        name="ask_user",
        description=(
            "Ask the user a question and wait for the answer. Suggested options never restrict "
            "the answer. The result's status is answered, declined or timed_out; only answered "
            "carries an answer, and none of them approves any other action."
        ),
        arguments=AskUserArgs,
        result=AskUserOutput,
        side_effect=SideEffect.PURE,
        capabilities=("user.interact",),
        timeouts=None,
        implementation=None,
    ),
)


def _build(settings: NoSettings, resources: Resources) -> Iterable[object]:
    return [cls() for cls in (MathTools, ClockTools) if resources.serves(cls)]


CORE = Family(name="core", settings=NoSettings, tools=CORE_TOOLS, build=_build)
