"""The ``toolcalls.grants.find`` activity: a standing grant that approves a call, if one does.

Candidates come from visibility (running ``ToolCallGrant`` workflows for the tool, in the call's
scope); each is trusted only once Temporal's own record and the deployment's key confirm it:
``describe`` shows the grant workflow runs on the deployment's task queue (the one this lookup runs
on) as the child of a workflow run, and the terms in its memo carry the deployment's attestation
for that very parent run (``toolcalls.attest``, which only ``ToolCallWorkflow`` on the
deployment's worker can ask, for an accepted, remembered approval). A workflow's type name and a
memo prove nothing: anyone who may start workflows can write both. The terms must then cover this
call: the same tool and principal, the same digest or any arguments within the granted
capabilities, the call's scope, an approver the call's rule allows, and an expiry still ahead.
The lookup itself answers only ``ToolCallWorkflow`` on this worker (a local activity).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError

from toolcalls.activities.attestations import (
    Attestor,
    Claim,
    Run,
    by_deployment_workflow,
    refused,
)
from toolcalls.workflows.models.approval import GrantScope
from toolcalls.workflows.models.attest import AttestedDecision
from toolcalls.workflows.models.call import SEARCH_GRANT_SCOPE, SEARCH_TOOL, WORKFLOW_NAME
from toolcalls.workflows.models.grant import (
    FIND_GRANT_ACTIVITY,
    GRANT_WORKFLOW,
    MEMO_GRANT,
    FoundGrant,
    Grant,
    GrantQuery,
    grant_terms,
    scope_key,
)
from toolcalls.workflows.rules.identities import same_identity

MAX_CANDIDATES = 20


def covers(grant: Grant, query: GrantQuery, now: datetime) -> bool:
    """Whether ``grant``'s terms approve the call ``query`` describes."""
    if grant.tool != query.tool or grant.expires_at <= now:
        return False
    if grant.principal != query.principal:
        return False
    if grant.digest is not None and grant.digest != query.digest:
        return False
    if grant.digest is None and not set(query.capabilities) <= set(grant.capabilities):
        return False
    if grant.scope is GrantScope.PARENT and grant.parent_id != query.parent_id:
        return False
    # A grant made before names were canonical may hold another spelling of an allowed name.
    return query.approvers is None or any(
        same_identity(grant.approver, name) for name in query.approvers
    )


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

    def __init__(
        self,
        client: Client,
        attestor: Attestor,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.client = client
        self.attestor = attestor
        self.clock = clock or (lambda: datetime.now(UTC))

    def activities(self) -> list[Any]:
        @activity.defn(name=FIND_GRANT_ACTIVITY)
        async def find(query: GrantQuery) -> FoundGrant:
            info = activity.info()
            if not by_deployment_workflow(info):
                raise refused(
                    f"{FIND_GRANT_ACTIVITY}: answers only {WORKFLOW_NAME} run by this worker, "
                    f"not {info.workflow_type!r}"
                )
            return FoundGrant(grant=await self.find(query, info.task_queue))

        return [find]

    async def find(self, query: GrantQuery, task_queue: str) -> Grant | None:
        """A grant on ``task_queue`` (the deployment's) that approves the call ``query`` names."""
        now = self.clock()
        seen = 0
        async for listed in self.client.list_workflows(visibility_query(query)):
            seen += 1
            if seen > MAX_CANDIDATES:
                break
            grant = await self._confirmed(listed.id, listed.run_id, task_queue, now)
            if grant is not None and covers(grant, query, now):
                return grant
        return None

    async def _confirmed(
        self, workflow_id: str, run_id: str, task_queue: str, now: datetime
    ) -> Grant | None:
        """The grant's terms, if Temporal's record and the deployment's key show that the
        deployment's ``ToolCallWorkflow`` made it."""
        try:
            described = await self.client.get_workflow_handle(workflow_id, run_id=run_id).describe()
            if (
                described.workflow_type != GRANT_WORKFLOW
                or described.task_queue != task_queue
                or described.parent_id is None
                or described.parent_run_id is None
            ):
                return None
            grant: Grant = await described.memo_value(MEMO_GRANT, type_hint=Grant)
        except (RPCError, KeyError, ValueError, TypeError):
            return None
        if grant.granted_in != described.parent_id:
            return None
        attestation = grant.attestation
        granting = Run(self.client.namespace, described.parent_id, described.parent_run_id)
        problem = self.attestor.problem(granting, attestation, grant_claim(grant), now)
        if problem is not None or attestation is None:
            return None
        if attestation.decision is not AttestedDecision.GRANT:
            return None
        if attestation.approver != grant.approver or attestation.expires_at != grant.expires_at:
            return None
        return grant


def grant_claim(grant: Grant) -> Claim:
    """What a grant's attestation vouches for (its run is the parent that made it)."""
    return Claim(call_id="", digest="", terms=grant_terms(grant))
