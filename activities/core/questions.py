"""``ask_user``: the arguments of a question the workflow itself asks and waits on, durably.

There is no activity: ``ToolCallWorkflow`` publishes the question and waits for an answer (an
update or a signal). The limits are the spec's and live in ``toolcalls.workflows.models.call``
because the workflow enforces the answer's.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from toolcalls.activities.base import ToolArgs
from toolcalls.workflows.models.question import (
    MAX_OPTION_CHARS,
    MAX_OPTIONS,
    MAX_QUESTION_CHARS,
)


class AskUserArgs(ToolArgs):
    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question for the user, at most 8,000 characters.",
    )
    options: list[str] | None = Field(
        default=None,
        description=(
            "Up to ten distinct suggested answers of at most 500 characters each. "
            "The user may still answer freely."
        ),
    )

    @field_validator("question")
    @classmethod
    def _nonblank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is blank")
        return value

    @field_validator("options")
    @classmethod
    def _options(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if len(value) > MAX_OPTIONS:
            raise ValueError(f"{len(value)} options; the limit is {MAX_OPTIONS}")
        for option in value:
            if not option.strip():
                raise ValueError("options must not be blank")
            if len(option) > MAX_OPTION_CHARS:
                raise ValueError(f"an option has more than {MAX_OPTION_CHARS} characters")
        if len(set(value)) != len(value):
            raise ValueError("options must be distinct")
        return value
