"""Settling an ``uncertain`` write: what ``ToolCallReconcile`` is asked and what it answers.

A write whose worker was lost (or whose service never answered) ends ``uncertain``: the effect may
have happened. Reconciling asks the backend, read-only, whether it did (an email by its
Message-ID, a calendar event by the identity the call gave it) and records the answer in a
workflow of its own, ``ToolCallReconcile``, one per call (``reconcile_workflow_id``). The write is
never run again.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

RECONCILE_WORKFLOW = "ToolCallReconcile"


def reconcile_activity_name(tool: str) -> str:
    """Activity type of a tool's read-only lookup of an uncertain call's effect."""
    return f"{tool}.reconcile"


def reconcile_workflow_id(call_workflow_id: str) -> str:
    """The id of the one ``ToolCallReconcile`` workflow of a call."""
    return f"{call_workflow_id}/reconcile"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LookupInput(_Model):
    """What a tool's lookup gets: the uncertain call, and what its result carried."""

    workflow_id: str
    call_id: str
    tool: str
    idempotency_key: str
    """``"{workflow_id}:{call_id}"``, from which the tool derived the write's identity."""
    output: dict[str, Any] | None = None
    """The uncertain result's output (an email's ``message_id``, an event's ``event_id``)."""


class Lookup(_Model):
    """A lookup's answer: whether the effect is there, and what was checked."""

    found: bool
    checked: str
    """What was looked at and for what, in one line (``Message-ID <...> in Sent over imap``)."""
    evidence: dict[str, Any] | None = None
    """When found: the service's record of it (a folder and UID, a message or event id)."""


class ReconcileRequest(_Model):
    """``ToolCallReconcile``'s input: the call, and the task queue its tool ran on."""

    lookup: LookupInput
    task_queue: str
    """Where the tool's workers (with the credentials) poll: the lookup runs there."""


class Settled(StrEnum):
    """What reconciling established."""

    FOUND = "found"
    """The effect happened: ``evidence`` is the backend's record of it."""
    NOT_FOUND = "not_found"
    """Not found (yet): the call stays uncertain; ``checked`` says what was looked at."""
    UNCHECKED = "unchecked"
    """The lookup itself failed (``checked`` says how): nothing is known."""


class Reconciliation(_Model):
    """The recorded answer about an uncertain call (``ToolCallReconcile``'s result)."""

    workflow_id: str
    call_id: str
    tool: str
    outcome: Settled
    checked: str
    evidence: dict[str, Any] | None = None
    checked_at: datetime
