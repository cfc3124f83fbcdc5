"""A decision's deadline, carried in its update's id: ``ToolCallClient`` sends a decision as the
``decide`` (or ``answer``) update and, when no worker takes it in time, as the signal instead; the
update's validator then refuses the update if it still reaches a worker, so that the decision is
applied once, by the signal. In the id, not the payload, so that a worker that predates it takes
the update as any other.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from temporalio import workflow
from temporalio.exceptions import ApplicationError

LATE_UPDATE = "late"
"""The error type of a ``decide`` or ``answer`` update refused because it arrived after the
deadline its id carries (``deliver_by_id``)."""
_DELIVER_BY = "toolcalls-deliver-by:"


def deliver_by_id(deadline: datetime) -> str:
    """An update id that carries ``deadline``: the call's validator refuses the update when it
    arrives later (``LATE_UPDATE``). In the id, not the payload, so that a worker that predates
    it takes the update as any other."""
    return f"{_DELIVER_BY}{int(deadline.timestamp() * 1000)}:{uuid.uuid4().hex}"


def deliver_by_of(update_id: str) -> datetime | None:
    """The deadline ``update_id`` carries, if it is a ``deliver_by_id``."""
    if not update_id.startswith(_DELIVER_BY):
        return None
    millis, _, _ = update_id.removeprefix(_DELIVER_BY).partition(":")
    if not millis.isdigit():
        return None
    return datetime.fromtimestamp(int(millis) / 1000, UTC)


def refuse_late() -> None:
    """An update validator's first check: refuse an update that reached the workflow after the
    deadline its id carries (``deliver_by_id``): its sender has sent the same decision as a signal
    since. A refusal by a validator leaves nothing in history."""
    update = workflow.current_update_info()
    deadline = deliver_by_of(update.id) if update is not None else None
    now = workflow.now()
    if deadline is not None and now > deadline:
        raise ApplicationError(
            f"the update arrived at {now.isoformat()}, after its deadline "
            f"{deadline.isoformat()}: its sender no longer waits for it",
            type=LATE_UPDATE,
            non_retryable=True,
        )
