"""Listing and revoking standing grants from an application or the CLI (``ToolCallClient``)."""

from __future__ import annotations

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.call.grants import GrantWorkflow
from toolcalls.workflows.models.call import SEARCH_TOOL
from toolcalls.workflows.models.grant import GRANT_WORKFLOW, MEMO_GRANT, Grant, Revocation
from toolcalls.workflows.models.views import NoPendingRequest


async def list_grants(client: Client, *, tool: str | None = None) -> list[Grant]:
    """The running grants, newest first; a grant whose memo cannot be read is left out."""
    query = f'WorkflowType = "{GRANT_WORKFLOW}" AND ExecutionStatus = "Running"'
    if tool is not None:
        query += f' AND {SEARCH_TOOL.name} = "{tool}"'
    found = []
    async for listed in client.list_workflows(query):
        try:
            grant: Grant = await listed.memo_value(MEMO_GRANT, type_hint=Grant)
        except (KeyError, ValueError, TypeError):
            continue
        found.append(grant)
    return sorted(found, key=lambda grant: grant.granted_at, reverse=True)


async def revoke_grant(client: Client, grant_id: str, revocation: Revocation) -> None:
    """Signal the grant to end; ``NoPendingRequest`` when no such grant is in force."""
    handle = client.get_workflow_handle_for(GrantWorkflow.run, grant_id)
    try:
        description = await handle.describe()
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise NoPendingRequest(f"{grant_id}: no such grant") from None
        raise
    if description.workflow_type != GRANT_WORKFLOW:
        raise NoPendingRequest(f"{grant_id}: not a grant")
    if description.status is not WorkflowExecutionStatus.RUNNING:
        raise NoPendingRequest(f"{grant_id}: the grant has already ended")
    await handle.signal(GrantWorkflow.revoke, revocation)
