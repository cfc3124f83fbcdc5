"""``ToolCallGrant``: the workflow that holds one standing grant until it expires or is revoked.

Its terms, names and payloads are in ``toolcalls.workflows.models.grant``, with how a grant is made
and found.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from temporalio import workflow

from toolcalls.workflows.models.grant import GRANT_WORKFLOW, Grant, GrantEnd, Revocation


@workflow.defn(name=GRANT_WORKFLOW)
class GrantWorkflow:
    """Holds one grant until it expires or is revoked."""

    def __init__(self) -> None:
        self._revocation: Revocation | None = None

    @workflow.run
    async def run(self, grant: Grant) -> GrantEnd:
        left = grant.expires_at - workflow.now()
        if left > timedelta(0):
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(lambda: self._revocation is not None, timeout=left)
        if self._revocation is None:
            return GrantEnd(grant_id=grant.grant_id, ended="expired")
        return GrantEnd(
            grant_id=grant.grant_id,
            ended="revoked",
            revoked_by=self._revocation.by,
            reason=self._revocation.reason,
        )

    @workflow.signal
    def revoke(self, revocation: Revocation) -> None:
        if self._revocation is None:
            self._revocation = revocation
