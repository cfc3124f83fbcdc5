"""Asking for an approval: the tool's preview of the call and the request ``ToolCallWorkflow``
publishes (memo, ``status``, search attribute) for approvers to decide on.

``ApprovalRequests`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``);
the wait for decisions is ``toolcalls.workflows.call.approval_flow``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow

from toolcalls.workflows.call import telemetry
from toolcalls.workflows.call.approvals import Approvals
from toolcalls.workflows.call.grants_and_notices import GrantsAndNotices
from toolcalls.workflows.call.parts import _Refused
from toolcalls.workflows.models.approval import ApprovalRequest, Prepared, PreviewArtifact
from toolcalls.workflows.models.call import (
    MEMO_PENDING_APPROVAL,
    CallPlan,
    ErrorCode,
    EventKind,
    Phase,
    prepare_activity_name,
)
from toolcalls.workflows.rules import policy


class ApprovalRequests(GrantsAndNotices):
    """The preview and the published request of the approval wait."""

    async def _request_approval(
        self,
        plan: CallPlan,
        decision: policy.Decision,
        expires_at: Any = None,
        prepared: Prepared | None = None,
    ) -> None:
        """Prepare the preview (unless ``prepared`` is given) and publish the request (memo,
        ``status``, search attribute); an edited call's request keeps the original's
        ``expires_at``."""
        # A tool's own preview replaces the plain arguments (which the request carries anyway):
        # the memo must not hold large arguments twice (payloads are limited to 2 MB).
        preview = [PreviewArtifact(kind="arguments", title="arguments", data=plan.arguments)]
        if plan.prepare:
            prepared = prepared or await self._prepare(plan)
            preview = prepared.preview
            self._precondition = prepared.precondition
        now = workflow.now()
        wait = self._bounded(self._request.approval_timeout)
        request = ApprovalRequest(
            request_id=str(workflow.uuid4()),
            workflow_id=self._workflow_id,
            call_id=self._call_id,
            tool=plan.tool,
            arguments=plan.arguments,
            capabilities=plan.capabilities,
            digest=plan.digest,
            preview=preview,
            reasons=decision.reasons(),
            requested_at=now,
            expires_at=expires_at or (now + wait if wait is not None else None),
            principal=self._request.principal,
        )
        self._approvals = Approvals(request, plan.approval_rule)
        published = self._approvals.published() if plan.approval_rule else request
        self._pending_approval = published
        self._set_phase(Phase.AWAITING_APPROVAL, memo={MEMO_PENDING_APPROVAL: published})
        self._event(EventKind.APPROVAL_REQUESTED, "; ".join(request.reasons))
        telemetry.approval_requested(self._call_id, plan, request.request_id)
        self._notify(plan, "waiting")

    async def _prepare(
        self, plan: CallPlan, refusable: frozenset[ErrorCode] = frozenset()
    ) -> Prepared:
        """The tool's preview of ``plan``; a failure with a code in ``refusable`` raises
        ``_Refused``, any other ends the call."""
        self._set_phase(Phase.PREPARING)
        refused = None
        try:
            prepared: Prepared = await self._activity(
                plan,
                prepare_activity_name(plan.tool),
                await self._tool_input(plan),
                Prepared,
                refusable=refusable,
            )
        except _Refused as exc:
            refused = exc
        if workflow.cancellation_reason() is not None:
            # A prepare step that does not heartbeat never sees the cancellation and its
            # answer swallows it; the call must not go on to ask for (or wait on) an approval.
            raise asyncio.CancelledError()
        if refused is not None:
            raise refused
        self._check_budget()
        return prepared

    def _republish(self) -> None:
        """The pending request changed (an approval of several, an escalation): show it."""
        assert self._approvals is not None
        self._pending_approval = self._approvals.published()
        workflow.upsert_memo({MEMO_PENDING_APPROVAL: self._pending_approval})
