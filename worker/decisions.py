"""``toolcalls decisions --since 1h``: the decision log, read back from Temporal.

Calls come from visibility (``ToolCallWorkflow`` runs started since then, newest first); each
one's decision from its history: the plan's recorded result (its ceiling verdicts, principal and
``[[policies]]`` verdicts) and the request's own policy, combined exactly as the workflow
combined them (``toolcalls.workflows.rules.policy``). Nothing is evaluated again, and no
argument value is shown: the principal's id, the tool, the effect, what decided it, each shadow
set's effect and the digest.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from toolcalls.workflows.models.call import (
    PLAN_ACTIVITY,
    WORKFLOW_NAME,
    PlanOutcome,
    ToolCallRequest,
)
from toolcalls.workflows.rules import policy

MAX_DECISIONS = 1_000
_LOCAL_ACTIVITY_MARKER = "core_local_activity"
_SHOWN = {"name", "mode", "effect", "policies"}


async def decisions(client: Client, since: timedelta, limit: int) -> list[dict[str, Any]]:
    """The decisions of calls started within ``since``, newest first, at most ``limit``."""
    start = (datetime.now(UTC) - since).strftime("%Y-%m-%dT%H:%M:%SZ")
    query = f'WorkflowType = "{WORKFLOW_NAME}" AND StartTime >= "{start}"'
    found = []
    async for execution in client.list_workflows(query, limit=limit):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        try:
            entry = await _decision(client, history)
        except Exception as error:  # one unreadable history is shown as such, not fatal
            entry = _unreadable(error)
        entry.update(
            workflow_id=execution.id,
            started_at=execution.start_time.isoformat(),
            status=execution.status.name.lower() if execution.status else "unknown",
        )
        found.append(entry)
    return found


async def _decision(client: Client, history: Any) -> dict[str, Any]:
    converter = client.data_converter
    request: ToolCallRequest | None = None
    outcome: PlanOutcome | None = None
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            if payloads:
                [request] = await converter.decode(payloads[:1], [ToolCallRequest])
        elif event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = event.marker_recorded_event_attributes
            if marker.marker_name != _LOCAL_ACTIVITY_MARKER or "result" not in marker.details:
                continue
            [data] = await converter.decode(marker.details["data"].payloads[:1], [dict])
            if data.get("activity_type") != PLAN_ACTIVITY:
                continue
            [outcome] = await converter.decode(marker.details["result"].payloads[:1], [PlanOutcome])
            break
    entry: dict[str, Any] = {"tool": request.tool if request else None}
    plan = outcome.plan if outcome is not None else None
    if plan is None:
        error = outcome.error if outcome is not None else None
        entry.update(effect="not planned", rules=[error.message] if error else [], shadow=[])
        entry.update(principal=request.principal.id if request and request.principal else None)
        return entry
    asked = request.policy if request else None
    decision = policy.decide_plan(plan, asked)
    reasons = decision.reasons() or [v.reason() for v in plan.policies]
    entry.update(
        tool=plan.tool,
        principal=plan.principal.id if plan.principal else None,
        effect=decision.effect.value,
        rules=reasons,
        policies=[
            v.model_dump(mode="json", include={"name", "mode", "effect", "policies"})
            for v in plan.policies
        ],
        shadow=[f"{name}={effect.value}" for name, effect in policy.shadow(plan, asked)],
        digest=plan.digest,
    )
    return entry


def _unreadable(error: Exception) -> dict[str, Any]:
    """The entry of a call whose history this process cannot decode: its payloads are encrypted
    under keys it lacks, or its input is not a request this version reads."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    if isinstance(error, ValidationError):
        first = f"input is not a request this version reads ({error.error_count()} errors)"
    return {"tool": None, "principal": None, "effect": "unreadable", "rules": [first], "shadow": []}


def decisions_text(found: list[dict[str, Any]]) -> str:
    """One line per decision."""
    if not found:
        return "no calls in that time"
    lines = []
    for entry in found:
        shadow = f" shadow {', '.join(entry['shadow'])}" if entry.get("shadow") else ""
        digest = (entry.get("digest") or "")[:12]
        lines.append(
            f"{entry['started_at'][:19]}  {entry['workflow_id']}  {entry.get('principal') or '-'}"
            f"  {entry.get('tool') or '-'}  {entry['effect']}  {digest}  ({entry['status']})"
            f"{shadow}  {'; '.join(entry.get('rules') or [])}".rstrip()
        )
    return "\n".join(lines)


def decisions_json(found: list[dict[str, Any]]) -> str:
    return json.dumps({"decisions": found}, indent=2)
