"""The one way a tool reports failure: an ``ApplicationError`` whose ``type`` is an ``ErrorCode``.

The workflow maps the ``type`` back to a ``ToolError``; ``details[0]`` carries the argument names
the model should change and, for a canceled or interrupted tool, its partial output.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio.exceptions import ApplicationError

from workflows.models import ErrorCode


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
