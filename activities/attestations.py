"""Attestations: how the deployment's activities know its own workflow decided what they run.

A client that may start workflows in the namespace can also run a worker of its own with a
workflow *named* ``ToolCallWorkflow`` and have it schedule the deployment's activities on the
deployment's task queue with any input. A workflow's type name therefore proves nothing; a MAC
under the deployment's keys does, made by an activity of the deployment's own worker for the
workflow run that asked (namespace, workflow id and run id come from ``activity.info()``, never
from the input):

- the ``plan`` activity attests ``inline`` plans for any workflow that asks (such a call runs only
  what the deployment's ceiling allows without an approval), and ``planned`` plans only when it
  runs as a *local* activity of ``ToolCallWorkflow``: a local activity runs in the worker that runs
  the workflow, so the caller is the deployment's own workflow code, not a look-alike;
- ``toolcalls.attest`` vouches for an approval (``approved``), a standing grant's use
  (``granted``) and a grant's terms (``grant``), again only as a local activity of
  ``ToolCallWorkflow``.

Tool activities, ``toolcalls.notify`` and the grant lookup recompute the MAC from what Temporal
tells them about the run and from their input, so an attestation is worth nothing in another run,
for another call, other arguments or another decision. Keys are 32 random bytes; the newest
signs, every listed one verifies (rotation, as with ``[codec]`` keys).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from toolcalls.workflows.models.attest import (
    ATTEST_ACTIVITY,
    Attestation,
    AttestedDecision,
    AttestInput,
)
from toolcalls.workflows.models.call import WORKFLOW_NAME, ErrorCode

log = logging.getLogger(__name__)
KEY_BYTES = 32
_CONTEXT_V1 = "toolcalls.inline.v1"
"""Inline plans' MACs (the fields of the first scheme, kept so calls in flight still verify)."""
_CONTEXT = "toolcalls.attest.v1"
_BY_WORKFLOW = frozenset(AttestedDecision) - {AttestedDecision.INLINE}
"""Decisions only ``ToolCallWorkflow`` on the deployment's worker is given."""


@dataclass(frozen=True)
class Run:
    """One workflow run, as Temporal names it."""

    namespace: str
    workflow_id: str
    run_id: str

    @classmethod
    def of(cls, info: activity.Info) -> Run | None:
        """The run that scheduled the activity ``info`` describes; ``None`` outside a workflow."""
        if not info.workflow_id or not info.workflow_run_id:
            return None
        return cls(info.namespace, info.workflow_id, info.workflow_run_id)


@dataclass(frozen=True)
class Claim:
    """What an attestation vouches for, besides the run."""

    call_id: str
    digest: str
    visible_tools: list[str] | None = None
    decision: AttestedDecision = AttestedDecision.INLINE
    approver: str | None = None
    expires_at: datetime | None = None
    terms: dict[str, Any] | None = None
    principal: str | None = None
    """For a connection-backed tool: whose connection the call acts through."""


class Attestor:
    """Makes and checks attestations with the deployment's keys."""

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        """``keys``: ``(id, key)`` pairs, newest first."""
        if not keys:
            raise ValueError("an attestor needs at least one key")
        self._keys = dict(keys)
        self._signing = keys[0]

    @classmethod
    def ephemeral(cls) -> Attestor:
        """An attestor with a key of its own, for one process (tests, a single embedded worker)."""
        return cls([("ephemeral", secrets.token_bytes(KEY_BYTES))])

    def issue(self, run: Run, claim: Claim) -> Attestation:
        """The attestation of ``claim`` for ``run``."""
        key_id, key = self._signing
        return Attestation(
            key_id=key_id,
            signature=_mac(key, run, claim),
            decision=claim.decision,
            approver=claim.approver,
            expires_at=claim.expires_at,
        )

    def problem(
        self, run: Run | None, attestation: Attestation | None, claim: Claim, now: datetime
    ) -> str | None:
        """Why ``attestation`` does not vouch for ``claim`` in ``run``; ``None``: it does.
        ``claim``'s decision, approver and expiry are taken from the attestation."""
        if attestation is None or run is None:
            return "it carries no attestation of the deployment"
        key = self._keys.get(attestation.key_id)
        if key is None:
            return (
                f"its attestation names key {attestation.key_id[:64]!r}, which is not one of "
                "this worker's attestation keys"
            )
        claimed = Claim(
            call_id=claim.call_id,
            digest=claim.digest,
            visible_tools=claim.visible_tools,
            decision=attestation.decision,
            approver=attestation.approver,
            expires_at=attestation.expires_at,
            terms=claim.terms,
            principal=claim.principal,
        )
        if not hmac.compare_digest(_mac(key, run, claimed), attestation.signature):
            return (
                "its attestation is not the deployment's for this workflow run, call and decision"
            )
        if attestation.expires_at is not None and attestation.expires_at <= now:
            return f"its attestation expired at {attestation.expires_at.isoformat()}"
        return None

    def activities(self) -> list[Any]:
        """``toolcalls.attest``, for ``ToolCallWorkflow``'s approvals and grants."""

        @activity.defn(name=ATTEST_ACTIVITY)
        async def attest(input: AttestInput) -> Attestation:
            info = activity.info()
            run = Run.of(info)
            if run is None or not by_deployment_workflow(info):
                raise refused(
                    f"{ATTEST_ACTIVITY}: attests only for {WORKFLOW_NAME} run by this worker, "
                    f"not {info.workflow_type!r}"
                    + ("" if info.is_local else " from a regular activity task")
                )
            claim = Claim(
                call_id=input.call_id,
                digest=input.digest,
                visible_tools=input.visible_tools,
                decision=input.decision,
                approver=input.approver,
                expires_at=input.expires_at,
                terms=input.terms,
                principal=input.principal,
            )
            return self.issue(run, claim)

        return [attest]


def by_deployment_workflow(info: activity.Info) -> bool:
    """Whether the activity ``info`` describes was scheduled by ``ToolCallWorkflow`` running on
    this very worker: a local activity never leaves the worker that runs its workflow, and this
    worker registers our ``ToolCallWorkflow`` under that name."""
    return info.is_local and info.workflow_type == WORKFLOW_NAME


def only_by_workflow(decision: AttestedDecision) -> bool:
    """Whether ``decision`` is one only ``ToolCallWorkflow`` on the deployment's worker gets."""
    return decision in _BY_WORKFLOW


def utc_now() -> datetime:
    return datetime.now(UTC)


def refused(message: str) -> ApplicationError:
    """A refusal of what the deployment did not attest: one warning line naming the workflow run,
    and a ``policy_denied`` error the SDK does not log again (``BENIGN``)."""
    info = activity.info()
    log.warning(
        "refused %s for workflow %s (%s, run %s): %s",
        info.activity_type,
        info.workflow_id,
        info.workflow_type,
        info.workflow_run_id,
        message,
        extra={"workflow_id": info.workflow_id, "error_code": ErrorCode.POLICY_DENIED.value},
    )
    return ApplicationError(
        message,
        {"fixable_args": [], "output": None},
        type=ErrorCode.POLICY_DENIED.value,
        non_retryable=True,
        category=ApplicationErrorCategory.BENIGN,
    )


def _mac(key: bytes, run: Run, claim: Claim) -> str:
    # A JSON array is an unambiguous encoding of the fields: no separator can be forged into one.
    fields: list[Any] = [
        run.namespace,
        run.workflow_id,
        run.run_id,
        claim.call_id,
        claim.digest,
        claim.visible_tools,
    ]
    if (
        claim.decision is AttestedDecision.INLINE
        and claim.approver is None
        and claim.expires_at is None
        and claim.terms is None
        and claim.principal is None
    ):
        message = json.dumps([_CONTEXT_V1, *fields], ensure_ascii=True)
    else:
        more: list[Any] = [
            claim.decision.value,
            claim.approver,
            claim.expires_at.isoformat() if claim.expires_at is not None else None,
            claim.terms,
        ]
        if claim.principal is not None:
            # Only then: attestations made before connections existed still verify.
            more.append(["principal", claim.principal])
        message = json.dumps(
            [_CONTEXT, *fields, *more], ensure_ascii=True, sort_keys=True, separators=(",", ":")
        )
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()
