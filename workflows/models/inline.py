"""Wire models and names of inline calls: calls ``ToolCalls`` runs inside the parent workflow.

An inline call has no workflow of its own: the parent's handlers (registered by the helper, named
``toolcalls.inline.*``) take its decisions and answers, each payload carrying the call id beside
the fields a ``ToolCallWorkflow`` handler takes; the parent's memo lists the calls waiting for a
human and its ``ToolCallsWaiting`` search attribute counts them.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRequest,
    DecisionInput,
    EditProposal,
)
from toolcalls.workflows.models.call import (
    Phase,
)
from toolcalls.workflows.models.question import (
    UserAnswer,
    UserQuestion,
)

INLINE_DECIDE = "toolcalls.inline.decide"
"""Update: an ``InlineDecision``; returns the ``ApprovalRecord``."""
INLINE_EDIT = "toolcalls.inline.edit"
"""Update: an ``InlineEdit``; returns the new ``ApprovalRequest``."""
INLINE_ANSWER = "toolcalls.inline.answer"
"""Update: an ``InlineAnswer``; returns the ``AskUserOutput``."""
INLINE_APPROVE = "toolcalls.inline.approve"
"""Signal: an ``InlineDecisionInput`` (any JSON; an invalid one is logged and ignored)."""
INLINE_DENY = "toolcalls.inline.deny"
INLINE_ANSWER_SIGNAL = "toolcalls.inline.answer_signal"
"""Signal: an ``InlineAnswer``."""
INLINE_STATUS = "toolcalls.inline.status"
"""Query: a call id; returns that inline call's ``CallState``."""
MEMO_INLINE_PENDING = "inline_pending"
"""The parent's memo key: a list of ``InlinePending``, one per inline call waiting for a human."""


def inline_workflow_id(parent_id: str, call_id: str) -> str:
    """The id a call of ``parent_id`` is known by, inline or as a child: the same for both."""
    return f"{parent_id}/tools/{call_id}"


def split_inline_id(workflow_id: str) -> tuple[str, str] | None:
    """``(parent_id, call_id)`` of an id made by ``inline_workflow_id``, else ``None``."""
    parent_id, sep, call_id = workflow_id.rpartition("/tools/")
    return (parent_id, call_id) if sep and parent_id and call_id else None


class InlineDecision(ApprovalDecision):
    """The payload of ``toolcalls.inline.decide``: a ``decide`` update for one inline call."""

    call_id: str


class InlineDecisionInput(DecisionInput):
    """The payload of the ``toolcalls.inline.approve`` and ``deny`` signals."""

    call_id: str


class InlineEdit(EditProposal):
    """The payload of ``toolcalls.inline.edit``."""

    call_id: str


class InlineAnswer(UserAnswer):
    """The payload of ``toolcalls.inline.answer`` and ``toolcalls.inline.answer_signal``."""

    call_id: str


class InlinePending(BaseModel):
    """One inline call waiting for a human, as the parent's memo lists it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str
    workflow_id: str
    """``"{parent_workflow_id}/tools/{call_id}"``: the id clients decide it by."""
    tool: str
    capabilities: list[str]
    phase: Phase
    approval: ApprovalRequest | None = None
    question: UserQuestion | None = None
    started_at: datetime
    omitted: bool = False
    """The request was too large for the memo: ``approval`` and ``question`` are left out, and
    the call's ``status`` (a worker serving the parent) has them."""
