"""The plan's step for a tool backed by per-principal connections: the provider goes into the
plan and, when the call's principal has not connected yet, the consent request it waits on."""

from __future__ import annotations

from typing import Any

from temporalio import activity

from toolcalls.activities.connections.connections import Connections
from toolcalls.workflows.models.call import (
    WORKFLOW_NAME,
    ErrorCode,
    PlanInput,
    PlanOutcome,
    ToolError,
)


async def with_connection(
    outcome: PlanOutcome, input: PlanInput, provider: str | None, connections: Connections | None
) -> PlanOutcome:
    """``outcome`` for a tool that acts through ``provider``'s connections (``None``: as it is).

    A call without a principal, an inline call, or a worker without ``[connections]`` is refused
    with ``connection_required``."""
    plan = outcome.plan
    if plan is None or provider is None:
        return outcome
    problem = None
    if input.principal is None:
        problem = f"acts with each principal's own {provider} account: the call names no principal"
    elif input.inline:
        problem = f"acts with a principal's own {provider} account: run it as {WORKFLOW_NAME}"
    elif connections is None:
        problem = "the worker that plans calls has no [connections] configured"
    if problem is not None:
        error = ToolError(code=ErrorCode.CONNECTION_REQUIRED, message=f"{plan.tool}: {problem}")
        return PlanOutcome(error=error)
    assert input.principal is not None
    assert connections is not None
    update: dict[str, Any] = {"connection": provider}
    principal = input.principal.id
    if not await connections.is_connected(provider, principal):
        info = activity.info()
        update["consent"] = connections.consent(
            provider, principal, info.workflow_id or "", input.call_id or ""
        )
    return outcome.model_copy(update={"plan": plan.model_copy(update=update)})
