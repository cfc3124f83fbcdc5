"""Wire models and names of standing grants: an approval remembered for later calls, as a
workflow of its own (``toolcalls.workflows.call.grants``).

A decision that says ``remember`` makes its ``ToolCallWorkflow`` have the grant's terms attested
by the deployment's worker and start a ``ToolCallGrant`` child workflow holding them in its memo;
the grant lives until it expires or is revoked (the ``revoke`` signal). A later call that needs an
approval asks the ``toolcalls.grants.find`` activity, which lists running grants by visibility and
trusts one only when it runs on the deployment's task queue, as the child of the very workflow run
the attestation names, and the attestation is the deployment's: a client can start a workflow of
any type, name and memo, even a look-alike ``ToolCallWorkflow`` that starts a child, but it has
no key. Nothing a request carries can grant anything.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolcalls.workflows.models.approval import MAX_APPROVER_CHARS, MAX_REASON_CHARS, GrantScope
from toolcalls.workflows.models.attest import Attestation

GRANT_WORKFLOW = "ToolCallGrant"
FIND_GRANT_ACTIVITY = "toolcalls.grants.find"
MEMO_GRANT = "grant"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Grant(_Model):
    """The terms of one standing grant, as its granting call wrote them."""

    grant_id: str
    tool: str
    digest: str | None
    """The granted arguments' digest; ``None``: any arguments within ``capabilities``."""
    capabilities: list[str]
    scope: GrantScope
    parent_id: str | None
    """The parent workflow a ``parent`` grant belongs to."""
    approver: str
    granted_at: datetime
    expires_at: datetime
    granted_in: str
    """The workflow id of the call whose decision made the grant."""
    request_id: str
    attestation: Attestation | None = None
    """The deployment's word on these terms, for the run ``granted_in`` names (a grant made
    before attestations has none, and approves nothing)."""
    principal: str | None = None
    """The id of whom the granting call acted for: the grant approves only calls for the same
    principal (``None``: only calls that name none)."""


def grant_terms(grant: Grant) -> dict[str, Any]:
    """What a grant's attestation covers: every term but the attestation itself (and, for a
    grant without a principal, that field, so grants made before it existed keep their terms)."""
    exclude = {"attestation"} if grant.principal is not None else {"attestation", "principal"}
    return grant.model_dump(mode="json", exclude=exclude)


class GrantQuery(_Model):
    """What the ``find`` activity looks for: a grant that approves this call."""

    tool: str
    digest: str
    capabilities: list[str]
    parent_id: str | None
    approvers: list[str] | None
    """The names the call's rule allows; ``None``: anyone."""
    principal: str | None = None
    """The id of whom the call acts for."""


class FoundGrant(_Model):
    grant: Grant | None = None


class Revocation(_Model):
    """The payload of a grant's ``revoke`` signal."""

    by: str = Field(default="", max_length=MAX_APPROVER_CHARS)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)


class GrantEnd(_Model):
    """How a grant ended: ``expired`` or ``revoked`` (by whom)."""

    grant_id: str
    ended: str
    revoked_by: str | None = None
    reason: str | None = None


def scope_key(scope: GrantScope, parent_id: str | None) -> str:
    """The ``ToolCallGrantScope`` value of a grant."""
    return f"parent:{parent_id}" if scope is GrantScope.PARENT else GrantScope.DEPLOYMENT.value


def grant_workflow_id(request_id: str) -> str:
    return f"toolcalls-grant-{request_id}"
