"""What ``ToolCallClient`` hands back: pending calls, call views, outcomes, and its errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.client import WorkflowHandle

from toolcalls.workflows.models.approval import ApprovalRecord, ApprovalRequest
from toolcalls.workflows.models.call import (
    CallState,
    Phase,
    ToolCallResult,
)
from toolcalls.workflows.models.limits import PayloadTooLarge
from toolcalls.workflows.models.question import (
    AskUserOutput,
    UserQuestion,
)
from toolcalls.workflows.models.reconcile import Reconciliation

__all__ = [
    "CallConflict",
    "CallNotFound",
    "CallView",
    "Delivery",
    "FinishedCall",
    "NoPendingRequest",
    "Outcome",
    "PayloadTooLarge",
    "PendingCall",
    "PendingPage",
    "Started",
    "finished_state",
    "memo_metadata",
    "metadata_of",
    "model_or_none",
]

Handle = WorkflowHandle[Any, ToolCallResult]
_M = TypeVar("_M", bound=BaseModel)


class NoPendingRequest(LookupError):
    """The call is not waiting for the decision or answer that was sent."""


class CallNotFound(LookupError):
    """No call has this id: no workflow, nor an inline call of the parent the id names."""


class Delivery(StrEnum):
    """How a decision or answer reached the call."""

    ACCEPTED = "accepted"
    """The update ran: the call has it (without a ``record``, with ``reason``: the call took it and
    was still applying it, an edit being planned again, when the client stopped waiting)."""
    REJECTED = "rejected"
    """The update's validator refused it; ``reason`` says why. Nothing was recorded."""
    QUEUED = "queued"
    """No worker serves the call: it went as a signal and is applied when one returns."""


@dataclass(frozen=True)
class Outcome:
    """What became of a decision or an answer."""

    delivery: Delivery
    reason: str | None = None
    record: ApprovalRecord | AskUserOutput | None = None

    @property
    def ok(self) -> bool:
        return self.delivery is not Delivery.REJECTED


@dataclass(frozen=True)
class PendingCall:
    """A call waiting for a human: enough to render it without asking a worker."""

    workflow_id: str
    tool: str
    capabilities: list[str]
    phase: Phase
    approval: ApprovalRequest | None
    question: UserQuestion | None
    started_at: datetime
    parent_id: str | None = None
    """The parent workflow: the one that started the call as a child (a ``ToolCalls`` parent),
    or, for an inline call, the one that runs it (and holds its request)."""
    inline: bool = False
    """Whether the call runs inside its parent (``ToolCalls(inline=True)``), not as a workflow of
    its own: its id names no workflow, and decisions reach it through the parent."""
    metadata: dict[str, str] = field(default_factory=dict)
    """The request's ``metadata`` as ``ToolCallClient`` recorded it at the start (empty for a
    call started otherwise): an MCP call's client and user, say."""

    @property
    def expires_at(self) -> datetime | None:
        waiting = self.approval or self.question
        return waiting.expires_at if waiting else None


@dataclass(frozen=True)
class PendingPage:
    """One page of the calls waiting for a human (``ToolCallClient.pending_page``)."""

    calls: list[PendingCall]
    total: int
    """How many calls wait in all, on every page."""
    next_page_token: str | None
    """The next page's token; ``None`` on the last page."""


@dataclass(frozen=True)
class CallView:
    """A call's state, and whether a worker answered for it (``live``) or history did."""

    state: CallState
    live: bool
    running: bool
    history_events: list[str]
    """Without a worker: the history's event types, so the log is not lost."""
    parent_id: str | None = None
    """The workflow that started the call (a ``ToolCalls`` parent), if one did."""
    metadata: dict[str, str] = field(default_factory=dict)
    """The request's ``metadata`` as ``ToolCallClient`` recorded it at the start (see
    ``PendingCall.metadata``)."""
    reconciliation: Reconciliation | None = None
    """An uncertain call's last recorded reconciliation (``ToolCallClient.reconcile``)."""


@dataclass(frozen=True)
class FinishedCall:
    """A call that has ended, as visibility lists it; its result is ``result_of`` away."""

    workflow_id: str
    run_id: str
    tool: str
    closed_at: datetime | None


@dataclass(frozen=True)
class Started:
    """A call that ``start_or_join`` started, or the existing call its id already named."""

    handle: Handle
    existing: bool
    """The id named a call that already existed: nothing new was started."""
    running: bool
    """The call is still running (an existing one was joined, or a new one started)."""


class CallConflict(ValueError):
    """The workflow id already names another call (another tool or other arguments)."""


MAX_MEMO_METADATA_CHARS = 4096
"""A request's metadata is recorded in the memo only up to this size (the request keeps it all)."""


def memo_metadata(metadata: Mapping[str, str]) -> dict[str, str] | None:
    """The metadata to record in a call's memo, or ``None`` when it is empty or too large."""
    if not metadata or len(json.dumps(dict(metadata))) > MAX_MEMO_METADATA_CHARS:
        return None
    return dict(metadata)


def metadata_of(value: Any) -> dict[str, str]:
    """Metadata read back from a memo; anything else there (another writer's) reads as none."""
    if not isinstance(value, dict):
        return {}
    return {str(key): item for key, item in value.items() if isinstance(item, str)}


def model_or_none(model: type[_M], value: Any) -> _M | None:
    """``value`` (from a memo, say) validated as ``model``; ``None`` stays ``None``."""
    return None if value is None else model.model_validate(value)


def finished_state(result: ToolCallResult) -> CallState:
    """The state of a call that has ended, from its result alone."""
    return CallState(
        workflow_id=result.workflow_id,
        call_id=result.call_id,
        tool=result.tool,
        phase=Phase.DONE,
        capabilities=result.capabilities,
        pending_approval=None,
        pending_question=None,
        events=result.events,
        result=result,
    )
