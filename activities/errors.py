"""The one way a tool reports failure: an ``ApplicationError`` whose ``type`` is an ``ErrorCode``.

The workflow maps the ``type`` back to a ``ToolError``; ``details[0]`` carries the argument names
the model should change and, for a canceled or interrupted tool, its partial output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import rfc8785
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from toolcalls.workflows.models.call import ErrorCode, ToolError


def tool_error(
    code: ErrorCode,
    message: str,
    *,
    fixable_args: Sequence[str] = (),
    retryable: bool = False,
    output: Any = None,
    next_retry_delay: timedelta | None = None,
) -> ApplicationError:
    """Build the error a tool raises; non-retryable unless ``retryable`` says otherwise."""
    details = {"fixable_args": list(fixable_args), "output": output}
    return ApplicationError(
        message,
        details,
        type=code.value,
        non_retryable=not retryable,
        next_retry_delay=next_retry_delay,
    )


def invalid_arguments(tool: str, exc: ValidationError) -> ToolError:
    """A ``ToolError`` naming every bad argument and what is wrong with it."""
    problems = []
    names: list[str] = []
    for err in exc.errors(include_url=False):
        loc = err["loc"]
        name = str(loc[0]) if loc else ""
        if name and name not in names:
            names.append(name)
        where = ".".join(str(part) for part in loc) or "arguments"
        message = err["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return ToolError(
        code=ErrorCode.INVALID_ARGUMENTS,
        message=f"{tool}: invalid arguments: {'; '.join(problems)}",
        fixable_args=names,
    )


def uncanonical_arguments(tool: str, arguments: Mapping[str, Any]) -> ToolError:
    names = []
    for name, value in arguments.items():
        try:
            rfc8785.dumps(value)
        except rfc8785.CanonicalizationError:
            names.append(name)
    return ToolError(
        code=ErrorCode.INVALID_ARGUMENTS,
        message=(
            f"{tool}: invalid arguments: {', '.join(names) or 'arguments'}: numbers must be "
            "finite, and integers between -(2**53 - 1) and 2**53 - 1"
        ),
        fixable_args=names,
    )


def oversized_arguments(
    tool: str, arguments: Mapping[str, Any], size: int, limit: int
) -> ToolError:
    """A ``ToolError`` for arguments whose canonical JSON is ``size`` bytes, over ``limit``;
    the largest argument is the one to shorten."""
    sizes = {
        name: len(json.dumps(value, ensure_ascii=False).encode())
        for name, value in arguments.items()
    }
    largest = max(sizes, key=sizes.__getitem__) if sizes else ""
    return ToolError(
        code=ErrorCode.INVALID_ARGUMENTS,
        message=(
            f"{tool}: invalid arguments: {largest or 'arguments'}: the arguments are {size} bytes "
            f"of JSON; at most {limit} are accepted"
        ),
        fixable_args=[largest] if largest else [],
    )
