"""Standing grants and notifications of ``ToolCallWorkflow``'s approval wait.

``GrantsAndNotices`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``):
looking up a grant that approves a call, starting the grant a remembered decision asks for, and
posting to the deployment's webhooks beside the wait.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ActivityError
from temporalio.workflow import ParentClosePolicy

from toolcalls.workflows.call.attested import Attested
from toolcalls.workflows.call.grants import GrantWorkflow
from toolcalls.workflows.models.approval import ApprovalRecord, DecisionInput, PreviewArtifact
from toolcalls.workflows.models.attest import AttestedDecision, AttestInput
from toolcalls.workflows.models.call import (
    NOTIFY_ACTIVITY,
    SEARCH_GRANT_SCOPE,
    SEARCH_STATUS,
    SEARCH_TOOL,
    CallPlan,
    EventKind,
    Notification,
    ToolCallResult,
)
from toolcalls.workflows.models.grant import (
    FIND_GRANT_ACTIVITY,
    MEMO_GRANT,
    FoundGrant,
    Grant,
    GrantQuery,
    grant_terms,
    grant_workflow_id,
    scope_key,
)

FIND_GRANT_TIMEOUT = timedelta(seconds=10)
NOTIFY_TIMEOUT = timedelta(seconds=30)
NOTIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_attempts=3
)
MAX_SUMMARY_CHARS = 500
FINISHED_NOTICE_PATCH = "toolcalls-finished-notice"
"""A call whose request names a ``notify`` webhook tells it how the call ended."""


class GrantsAndNotices(Attested):
    """Grants and notifications for the approval wait."""

    _notifications: list[asyncio.Task[None]]
    _notify_queue: str | None = None
    """The notification activity's task queue; ``None``: this workflow's own (the deployment's).
    A call run inside another workflow (``toolcalls.workflows.call.inline``) names the
    deployment's."""

    # Grants ---------------------------------------------------------------------------------

    async def _granted(self, plan: CallPlan) -> bool:
        """Whether a standing grant approves this call (recorded as its approval)."""
        parent = workflow.info().parent
        rule = plan.approval_rule
        assert rule is not None
        if rule.min_approvals > 1:
            return False
        query = GrantQuery(
            tool=plan.tool,
            digest=plan.digest,
            capabilities=plan.capabilities,
            parent_id=parent.workflow_id if parent else None,
            approvers=rule.approvers,
            principal=plan.principal.id if plan.principal is not None else None,
        )
        try:
            found = await workflow.execute_local_activity(
                FIND_GRANT_ACTIVITY,
                query,
                result_type=FoundGrant,
                start_to_close_timeout=FIND_GRANT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as err:
            # Without an answer the call asks a human, as it would without grants.
            self._event(EventKind.GRANT_LOOKUP_FAILED, f"asking a human instead: {err.cause}")
            return False
        grant = found.grant
        if grant is None:
            return False
        self._approval = ApprovalRecord(
            request_id=grant.request_id,
            digest=plan.digest,
            approved=True,
            approver=grant.approver,
            reason=None,
            decided_at=workflow.now(),
            via="grant",
            grant_id=grant.grant_id,
            expires_at=grant.expires_at,
        )
        self._approved_by = [self._approval]
        self._event(
            EventKind.GRANT_USED,
            f"grant {grant.grant_id} by {grant.approver}, until {grant.expires_at.isoformat()}",
        )
        return True

    async def _remember(
        self, plan: CallPlan, record: ApprovalRecord, decision: DecisionInput
    ) -> None:
        """Start the grant a remembered approval asked for, as a child workflow."""
        terms = decision.remember
        assert terms is not None
        parent = workflow.info().parent
        now = workflow.now()
        grant = Grant(
            grant_id=grant_workflow_id(record.request_id),
            tool=plan.tool,
            digest=None if terms.any_arguments else plan.digest,
            capabilities=plan.capabilities,
            scope=terms.scope,
            parent_id=parent.workflow_id if parent else None,
            approver=record.approver,
            granted_at=now,
            expires_at=now + terms.duration,
            granted_in=self._workflow_id,
            request_id=record.request_id,
            principal=plan.principal.id if plan.principal is not None else None,
        )
        if self._attests():
            claim = AttestInput(
                call_id="",
                digest="",
                decision=AttestedDecision.GRANT,
                approver=grant.approver,
                expires_at=grant.expires_at,
                terms=grant_terms(grant),
            )
            attestation = await self._attest(claim, "the grant")
            grant = grant.model_copy(update={"attestation": attestation})
        await workflow.start_child_workflow(
            GrantWorkflow.run,
            grant,
            id=grant.grant_id,
            memo={MEMO_GRANT: grant},
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(SEARCH_TOOL, plan.tool),
                    SearchAttributePair(SEARCH_STATUS, "grant"),
                    SearchAttributePair(
                        SEARCH_GRANT_SCOPE, scope_key(terms.scope, grant.parent_id)
                    ),
                ]
            ),
            parent_close_policy=ParentClosePolicy.ABANDON,
        )
        self._approval = record.model_copy(
            update={"grant_id": grant.grant_id, "expires_at": grant.expires_at}
        )
        self._event(
            EventKind.GRANT_CREATED,
            f"{grant.grant_id} by {record.approver}: {terms.scope.value} scope, "
            f"{'any arguments' if terms.any_arguments else 'these arguments'}, "
            f"until {grant.expires_at.isoformat()}",
        )

    # Notifications --------------------------------------------------------------------------

    def _notify(self, plan: CallPlan, kind: str) -> None:
        """Post to each webhook beside the wait; failures are events, never the call's."""
        if not plan.webhooks:
            return
        pending = self._pending_approval
        assert pending is not None
        for webhook in plan.webhooks:
            notification = Notification(
                kind=kind,
                webhook=webhook,
                workflow_id=self._workflow_id,
                call_id=self._call_id,
                tool=plan.tool,
                capabilities=plan.capabilities,
                summary=_summary(pending.preview),
                approvers=pending.approvers_shown or pending.approvers,
                requested_at=pending.requested_at,
                expires_at=pending.expires_at,
                digest=plan.digest,
                visible_tools=plan.visible_tools,
                attestation=self._attestations.get(plan.digest),
            )
            # Beside the wait: a webhook that fails or retries never holds up the call.
            self._notifications.append(asyncio.create_task(self._post(notification)))

    async def _notify_finished(self, result: ToolCallResult) -> None:
        """Tell the request's ``notify`` webhook how the call ended; a failure is an event. A
        call refused before its plan has no attestation to notify with."""
        target = self._request.notify
        assert target is not None
        plan = self._plan
        attestation = self._attestations.get(plan.digest) if plan is not None else None
        if plan is None or attestation is None:
            self._event(
                EventKind.NOTIFICATION_FAILED,
                f"finished to {target}: the call ended before the deployment planned it",
            )
            return
        error = result.error
        notification = Notification(
            kind="finished",
            webhook=target,
            workflow_id=self._workflow_id,
            call_id=self._call_id,
            tool=plan.tool,
            capabilities=plan.capabilities,
            summary=error.message[:MAX_SUMMARY_CHARS] if error else "",
            approvers=None,
            requested_at=workflow.info().start_time,
            expires_at=None,
            digest=plan.digest,
            visible_tools=plan.visible_tools,
            attestation=attestation,
            status=result.status.value,
            error=f"{error.code.value}: {error.message[:MAX_SUMMARY_CHARS]}" if error else None,
        )
        await self._post(notification)

    async def _post(self, notification: Notification) -> None:
        what = f"{notification.kind} to {notification.webhook}"
        try:
            await workflow.execute_activity(
                NOTIFY_ACTIVITY,
                notification,
                task_queue=self._notify_queue,
                start_to_close_timeout=NOTIFY_TIMEOUT,
                retry_policy=NOTIFY_RETRY,
            )
        except ActivityError as err:
            self._event(EventKind.NOTIFICATION_FAILED, f"{what}: {err.cause}")
            return
        self._event(EventKind.NOTIFIED, what)


def _short(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= MAX_SUMMARY_CHARS else text[:MAX_SUMMARY_CHARS] + "..."


def _summary(preview: list[PreviewArtifact]) -> str:
    """A short text of the preview for a notification."""
    parts = []
    for artifact in preview:
        body = artifact.text if artifact.text is not None else _short(artifact.data or {})
        parts.append(f"{artifact.title}: {body}")
    text = "\n".join(parts)
    return text if len(text) <= MAX_SUMMARY_CHARS else text[:MAX_SUMMARY_CHARS] + "..."
