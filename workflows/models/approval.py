"""Wire models of approvals: what a human is asked, what they decide, what is recorded.

Beside the models of a call (``toolcalls.workflows.models.call``), which hold these in their
requests, plans and results; kept apart to keep both short.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.workflows.models.principal import Principal

MAX_APPROVER_CHARS = 200
MAX_REASON_CHARS = 2_000
MAX_RESPONSE_CHARS = 4_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PreviewArtifact(_Model):
    """One piece of what a human approves: arguments, a process spec, a diff, a request."""

    kind: str
    title: str
    text: str | None = None
    data: dict[str, Any] | None = None


class Prepared(_Model):
    """A ``prepare`` activity's result: the preview and what ``execute`` must find unchanged."""

    preview: list[PreviewArtifact]
    precondition: dict[str, Any] | None = None


class ApprovalRule(_Model):
    """Who may decide one call and how, fixed at plan time from the deployment's ``[approvers]``
    (``toolcalls.workflows.rules.approvers``); absent from a plan, anyone may decide with one
    approval."""

    rules: list[str] = Field(default_factory=list)
    """The ``[approvers.rules]`` keys that matched."""
    approvers: list[str] | None = None
    """The names allowed to decide; ``None``: anyone."""
    shown: list[str] = Field(default_factory=list)
    """The names and groups as the configuration gives them, for people."""
    min_approvals: int = 1
    remind_every: timedelta | None = None
    escalate_after: timedelta | None = None
    escalate_to: list[str] = Field(default_factory=list)
    """Names who may also decide once ``escalate_after`` passed undecided."""
    escalate_shown: list[str] = Field(default_factory=list)
    max_grant: timedelta | None = None
    """Longest standing grant a decision may create; ``None``: decisions cannot remember."""
    respond: bool = True
    """Whether an approver may answer in place of the tool (``[approvers] respond``)."""


class ApprovalRequest(_Model):
    """What a human is asked to approve, bound to one call by ``request_id`` and ``digest``."""

    request_id: str
    workflow_id: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    capabilities: list[str]
    digest: str
    preview: list[PreviewArtifact]
    reasons: list[str]
    """Which rules asked for approval, e.g. ``process.execute: require_approval (deployment)``."""
    requested_at: datetime
    expires_at: datetime | None
    approvers: list[str] | None = None
    """Who may decide (names, once groups are expanded); ``None``: anyone."""
    approvers_shown: list[str] = Field(default_factory=list)
    """The same as the configuration names them (groups and names), for people."""
    min_approvals: int = 1
    approved_by: list[str] = Field(default_factory=list)
    """Approvers whose approval of this digest is recorded so far (two-person rule)."""
    escalated: bool = False
    max_grant: timedelta | None = None
    """Longest standing grant a decision may create; ``None``: none."""
    respond: bool = True
    """Whether an approver may answer in place of the tool (a "respond" decision)."""
    principal: Principal | None = None
    """Whom the call acts for: a decision is for this principal's call only, and a grant it
    makes approves only this principal's later calls."""


class GrantScope(StrEnum):
    """Which later calls a standing grant approves."""

    PARENT = "parent"
    """Calls made by the same parent workflow (the ``ToolCalls`` helper)."""
    DEPLOYMENT = "deployment"
    """Any call on the deployment."""


class GrantTerms(_Model):
    """What a decision grants for later calls of the same tool ("approve and remember")."""

    duration: timedelta = Field(gt=timedelta(0))
    scope: GrantScope = GrantScope.PARENT
    any_arguments: bool = False
    """Also calls with other arguments (within the granted call's capabilities)."""


class DecisionInput(_Model):
    """The payload of the ``approve`` and ``deny`` signals."""

    request_id: str
    digest: str
    approver: str = Field(default="", max_length=MAX_APPROVER_CHARS)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)
    arguments: dict[str, Any] | None = None
    """Edited arguments: the call is planned and previewed again and the approval binds to them."""
    remember: GrantTerms | None = None
    """Grant the same approval to later calls (only with an approval)."""
    response: str | None = Field(default=None, max_length=MAX_RESPONSE_CHARS)
    """Answer in place of the tool (only with a denial): the tool never runs and the model reads
    this text as the tool's output, marked as a person's answer."""

    @field_validator("response")
    @classmethod
    def _response(cls, response: str | None) -> str | None:
        if response is not None and not response.strip():
            raise ValueError("a response cannot be blank")
        return response


class ApprovalDecision(DecisionInput):
    """The payload of the ``decide`` update."""

    approved: bool


class ApprovalRecord(_Model):
    """A decision as the workflow accepted it, kept in the result."""

    request_id: str
    digest: str
    approved: bool
    approver: str
    reason: str | None
    decided_at: datetime
    via: str
    """``update``, ``signal``, or ``grant`` (a standing grant approved the call)."""
    grant_id: str | None = None
    """The standing grant this decision created, or (``via="grant"``) the one that approved."""
    expires_at: datetime | None = None
    """When that grant ends."""
    response: str | None = None
    """The approver's answer in place of the tool (a "respond" decision): the tool did not run."""


class ArgumentEdit(_Model):
    """Arguments an approver changed before approving."""

    by: str
    at: datetime
    original: dict[str, Any]
    original_digest: str
    edited: dict[str, Any]
    digest: str


class EditProposal(_Model):
    """The payload of the ``edit`` update: other arguments for the pending request, not approved."""

    request_id: str
    digest: str
    editor: str = Field(default="", max_length=MAX_APPROVER_CHARS)
    arguments: dict[str, Any]
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)

    def as_decision(self) -> DecisionInput:
        return DecisionInput(
            request_id=self.request_id,
            digest=self.digest,
            approver=self.editor,
            reason=self.reason,
            arguments=self.arguments,
        )
