"""Wire models of ``ask_user``: the question a call waits on, the answer a person sends, and
what the tool returns. The ``answer`` update and ``answer_signal`` signal carry ``UserAnswer``."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from toolcalls.workflows.models.approval import MAX_APPROVER_CHARS

MAX_QUESTION_CHARS = 8_000
MAX_OPTIONS = 10
MAX_OPTION_CHARS = 500
MAX_ANSWER_CHARS = 16_384


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QuestionStatus(StrEnum):
    ANSWERED = "answered"
    DECLINED = "declined"
    TIMED_OUT = "timed_out"


class UserQuestion(_Model):
    """A question the workflow is waiting to have answered (``ask_user``)."""

    request_id: str
    workflow_id: str
    call_id: str
    question: str
    options: list[str]
    asked_at: datetime
    expires_at: datetime | None


class UserAnswer(_Model):
    """The payload of the ``answer`` update and ``answer_signal`` signal; ``None`` declines."""

    request_id: str
    answer: str | None
    responder: str = Field(default="", max_length=MAX_APPROVER_CHARS)


class AskUserOutput(_Model):
    """The output of ``ask_user``."""

    request_id: str
    status: QuestionStatus
    answer: str | None
