"""Wire models of attestations: the deployment's own word on what it decided.

Every tool activity, the notification activity and the grant lookup run only what one of these
vouches for. An attestation is a MAC under one of the deployment's keys, made by an activity of
the deployment's own worker (``toolcalls.activities.inline``), over the workflow run it was made
for (namespace, workflow id and run id, as Temporal reports them to that activity), the call
(id, digest, visible tools) and the decision with its approver and expiry. The checks and who may
ask for which decision are in ``toolcalls.activities.inline`` and docs/design.md, "Trust".
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

ATTEST_ACTIVITY = "toolcalls.attest"
"""The local activity ``ToolCallWorkflow`` asks for an attestation of an approval or a grant."""
ATTEST_PATCH = "toolcalls-attested-decisions"
"""The patch that added attested approvals and grants to ``ToolCallWorkflow``."""


class AttestedDecision(StrEnum):
    """What an attestation vouches for."""

    INLINE = "inline"
    """A plan for a workflow that runs the call itself: no approval the deployment requires."""
    PLANNED = "planned"
    """A plan ``ToolCallWorkflow`` made on the deployment's worker."""
    APPROVED = "approved"
    """``ToolCallWorkflow`` accepted the approval of ``approver`` for this digest."""
    GRANTED = "granted"
    """``ToolCallWorkflow`` found a standing grant by ``approver`` that covers this digest."""
    GRANT = "grant"
    """The terms of a standing grant ``ToolCallWorkflow`` made (the grant's own record)."""


class Attestation(BaseModel):
    """A MAC under the deployment's key ``key_id`` and what it vouches for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key_id: str
    signature: str
    decision: AttestedDecision = AttestedDecision.INLINE
    approver: str | None = None
    expires_at: datetime | None = None


class AttestInput(BaseModel):
    """What ``ATTEST_ACTIVITY`` is asked to vouch for, for the workflow run that asks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str
    digest: str
    visible_tools: list[str] | None = None
    decision: AttestedDecision
    approver: str | None = None
    expires_at: datetime | None = None
    terms: dict[str, Any] | None = None
    """A grant's terms (``decision="grant"``), as JSON."""
    principal: str | None = None
    """For a connection-backed tool: whose connection the call acts through."""
