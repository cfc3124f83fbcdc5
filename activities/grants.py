"""The ``toolcalls.grants.find`` activity: a standing grant that approves a call, if one does.

Candidates come from visibility (running ``ToolCallGrant`` workflows for the tool, in the call's
scope); each is trusted only once Temporal's own records confirm it: ``describe`` shows the grant
workflow was started as the child of a workflow whose type is ``ToolCallWorkflow`` (only workflow
code can start a child, and ours starts one only for an accepted, remembered approval), and the
terms in its memo (written by that parent when it started the child) cover this call: the same
tool, the same digest or any arguments within the granted capabilities, the call's scope, an
approver the call's rule allows, and an expiry still ahead.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError

from toolcalls.workflows.models.approval import GrantScope
from toolcalls.workflows.models.call import SEARCH_GRANT_SCOPE, SEARCH_TOOL, WORKFLOW_NAME
from toolcalls.workflows.models.grant import (
    FIND_GRANT_ACTIVITY,
    GRANT_WORKFLOW,
    MEMO_GRANT,
    FoundGrant,
    Grant,
    GrantQuery,
    scope_key,
)

MAX_CANDIDATES = 20


def covers(grant: Grant, query: GrantQuery, now: datetime) -> bool:
    """Whether ``grant``'s terms approve the call ``query`` describes."""
    if grant.tool != query.tool or grant.expires_at <= now:
        return False
    if grant.digest is not None and grant.digest != query.digest:
        return False
    if grant.digest is None and not set(query.capabilities) <= set(grant.capabilities):
        return False
    if grant.scope is GrantScope.PARENT and grant.parent_id != query.parent_id:
        return False
    return query.approvers is None or grant.approver in query.approvers


def visibility_query(query: GrantQuery) -> str:
    scopes = [scope_key(GrantScope.DEPLOYMENT, None)]
    if query.parent_id is not None:
        scopes.append(scope_key(GrantScope.PARENT, query.parent_id))
    listed = ", ".join(json_string(scope) for scope in scopes)
    return (
        f'WorkflowType = "{GRANT_WORKFLOW}" AND ExecutionStatus = "Running" '
        f"AND {SEARCH_TOOL.name} = {json_string(query.tool)} "
        f"AND {SEARCH_GRANT_SCOPE.name} IN ({listed})"
    )


def json_string(value: str) -> str:
    """A visibility-query string literal (double quotes, backslash escapes)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class GrantFinder:
    """Finds grants with a Temporal client of the worker's own."""

    def __init__(self, client: Client, clock: Callable[[], datetime] | None = None) -> None:
        self.client = client
        self.clock = clock or (lambda: datetime.now(UTC))

    def activities(self) -> list[Any]:
        @activity.defn(name=FIND_GRANT_ACTIVITY)
        async def find(query: GrantQuery) -> FoundGrant:
            return FoundGrant(grant=await self.find(query))

        return [find]

    async def find(self, query: GrantQuery) -> Grant | None:
        now = self.clock()
        seen = 0
        async for listed in self.client.list_workflows(visibility_query(query)):
            seen += 1
            if seen > MAX_CANDIDATES:
                break
            grant = await self._confirmed(listed.id, listed.run_id)
            if grant is not None and covers(grant, query, now):
                return grant
        return None

    async def _confirmed(self, workflow_id: str, run_id: str) -> Grant | None:
        """The grant's terms, if Temporal's records show our workflow started it."""
        try:
            described = await self.client.get_workflow_handle(workflow_id, run_id=run_id).describe()
            if described.workflow_type != GRANT_WORKFLOW or described.parent_id is None:
                return None
            parent = await self.client.get_workflow_handle(
                described.parent_id, run_id=described.parent_run_id
            ).describe()
            if parent.workflow_type != WORKFLOW_NAME:
                return None
            grant: Grant = await described.memo_value(MEMO_GRANT, type_hint=Grant)
        except (RPCError, KeyError, ValueError, TypeError):
            return None
        return grant if grant.granted_in == described.parent_id else None
