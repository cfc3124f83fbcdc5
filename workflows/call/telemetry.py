"""What ``ToolCallWorkflow`` tells operators: its metrics and its spans, both replay-safe.

Metrics go through ``workflow.metric_meter()``, which the SDK skips while a workflow replays, so a
worker that rebuilds a call from history (a restart, an evicted cache) never counts it twice. Their
labels are low-cardinality by construction: tool names from the catalog, statuses, error codes,
channels and outcomes; never call ids, workflow ids or arguments.

Spans are zero-length spans made with ``temporalio.contrib.opentelemetry``'s workflow API, under the
span that started the workflow (the client's or the parent workflow's), and only when the worker
runs the SDK's ``TracingInterceptor`` (``[telemetry]``, ``OTEL_*``): without the ``otel`` extra or
the interceptor this module does nothing. The SDK makes no span while replaying. Attributes name
the tool, its capabilities, the status and the error code, and for approvals the approver and the
channel; never arguments, previews or outputs.

Nothing here adds a command to history: the recorded histories replay unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import MetricMeter

from toolcalls.workflows.models.approval import ApprovalRecord
from toolcalls.workflows.models.call import CallPlan, ErrorCode, PlanOutcome, ToolCallResult

CALLS = "toolcalls_calls"
"""Counter: calls that ended, by ``tool`` and ``status``."""
CALL_ERRORS = "toolcalls_call_errors"
"""Counter: calls that ended with an error, by ``tool`` and ``code``."""
DECISIONS = "toolcalls_decisions"
"""Counter: approval decisions received, by ``channel`` (update, signal) and ``outcome``
(approved, denied, responded, ignored, rejected)."""
APPROVAL_WAIT = "toolcalls_approval_wait_seconds"
"""Histogram: how long a call waited for its approval, by ``tool`` and ``outcome`` (approved,
denied, responded, timed_out)."""
APPROVAL_WAIT_BUCKETS = (1.0, 5.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0, 604800.0)
"""Seconds: approvals take from seconds to days."""
WORKFLOW_METRICS = (CALLS, CALL_ERRORS, DECISIONS, APPROVAL_WAIT)
SHADOW_DISAGREEMENTS = "toolcalls_policy_shadow_disagreements"
"""Counter: calls where a shadow policy set would have decided otherwise than the effective
decision, by ``tool`` and ``set``. Only a deployment with a shadow set counts it."""
POLICY_METRICS = (SHADOW_DISAGREEMENTS,)
_COUNTERS = {
    CALLS: "Tool calls that ended, by final status",
    CALL_ERRORS: "Tool calls that ended with an error, by error code",
    DECISIONS: "Approval decisions received, by channel and outcome",
    SHADOW_DISAGREEMENTS: "Calls a shadow policy set would have decided otherwise",
}
"""Each counter's description."""

UNKNOWN_TOOL = "unknown"
"""The ``tool`` label of a call naming a tool the deployment does not have: the model chose the
name, so it cannot be a label."""
_FOUND_CODES = frozenset({ErrorCode.INVALID_ARGUMENTS, ErrorCode.INTERNAL})
"""The plan's refusals that come only after it found the tool in the catalog (its arguments, its
declaration). Its others (an unknown tool, one outside the profile, an unknown profile) come
before or instead of that."""

SPAN_PLAN = "toolcalls.plan"
SPAN_DECIDE = "toolcalls.decide"
SPAN_APPROVAL_REQUESTED = "toolcalls.approval.requested"
SPAN_APPROVAL_DECIDED = "toolcalls.approval.decided"
SPAN_APPROVAL_TIMED_OUT = "toolcalls.approval.timed_out"
SPAN_EXECUTE = "toolcalls.execute"
SPAN_RESULT = "toolcalls.result"
SPANS = (
    SPAN_PLAN,
    SPAN_DECIDE,
    SPAN_APPROVAL_REQUESTED,
    SPAN_APPROVAL_DECIDED,
    SPAN_APPROVAL_TIMED_OUT,
    SPAN_EXECUTE,
    SPAN_RESULT,
)


def planned(call_id: str, plan: CallPlan) -> None:
    """The plan step gave a plan."""
    _span(SPAN_PLAN, call_id, plan.tool, plan.capabilities, side_effect=plan.side_effect.value)


def decided(
    call_id: str,
    plan: CallPlan,
    effect: str,
    rules: Sequence[str] = (),
    shadow: Sequence[tuple[str, str]] = (),
) -> None:
    """The policy's verdict on the call: allow, deny or require_approval.

    With ``rules`` (what decided) and ``shadow`` (each shadow set's effect), for a call that
    names a principal or runs under ``[[policies]]``, this is the decision log's entry: the
    ``toolcalls.decide`` span's attributes and one log record, with the principal's id, the tool
    and the digest; never argument values. A shadow effect that differs is counted.
    """
    principal = plan.principal.id if plan.principal is not None else None
    logged = principal is not None or bool(plan.policies)
    shadows = [f"{name}={value}" for name, value in shadow]
    extra: dict[str, str | bool | float] = {"effect": effect}
    if logged:
        extra.update(rules="; ".join(rules), digest=plan.digest)
        if principal is not None:
            extra["principal"] = principal
        if shadows:
            extra["shadow"] = ", ".join(shadows)
    _span(SPAN_DECIDE, call_id, plan.tool, plan.capabilities, **extra)
    for name, value in shadow:
        if value != effect:
            _count(SHADOW_DISAGREEMENTS, {"tool": plan.tool, "set": name})
    if not logged or not workflow.logger.isEnabledFor(logging.INFO):
        return
    disagree = [f"{name}={value}" for name, value in shadow if value != effect]
    workflow.logger.info(
        "%s call %s decided: %s%s",
        plan.tool,
        call_id,
        effect,
        f" (shadow disagrees: {', '.join(disagree)})" if disagree else "",
        extra={
            "tool": plan.tool,
            "call_id": call_id,
            "decision": effect,
            "rules": list(rules),
            "shadow": shadows,
            "principal": principal,
            "digest": plan.digest,
        },
    )


def approval_requested(call_id: str, plan: CallPlan, request_id: str) -> None:
    """The call published an approval request and waits."""
    _span(SPAN_APPROVAL_REQUESTED, call_id, plan.tool, plan.capabilities, request_id=request_id)


def approval_decision(call_id: str, tool: str, record: ApprovalRecord) -> None:
    """A decision was accepted (each approval of several counts)."""
    outcome = "approved" if record.approved else "denied"
    if record.response is not None:
        outcome = "responded"
    _count(DECISIONS, {"channel": record.via, "outcome": outcome})
    _span(
        SPAN_APPROVAL_DECIDED,
        call_id,
        tool,
        (),
        approver=record.approver,
        channel=record.via,
        approved=record.approved,
    )


def decision_refused(via: str, outcome: str) -> None:
    """A decision that was not accepted: ``ignored`` (a signal) or ``rejected`` (an update's
    validator refused it, so it never reached history)."""
    _count(DECISIONS, {"channel": via, "outcome": outcome})


def approval_ended(call_id: str, tool: str, outcome: str, waited: timedelta) -> None:
    """The approval wait ended: approved, denied, responded or timed_out."""
    if _replaying():
        return
    workflow.metric_meter().create_histogram_timedelta(
        APPROVAL_WAIT, "Time a call waited for its approval decision", "s"
    ).record(waited, {"tool": tool, "outcome": outcome})
    if outcome == "timed_out":
        _span(SPAN_APPROVAL_TIMED_OUT, call_id, tool, (), waited_seconds=waited.total_seconds())


def executing(call_id: str, plan: CallPlan) -> None:
    """The tool's activity is scheduled."""
    _span(SPAN_EXECUTE, call_id, plan.tool, plan.capabilities, side_effect=plan.side_effect.value)


def tool_found(outcome: PlanOutcome) -> bool:
    """Whether the plan's recorded answer shows that the deployment has the requested tool.

    Read from the outcome alone, so the workflow decides it without I/O, and the same way on
    every worker and replay.
    """
    if outcome.plan is not None:
        return True
    return outcome.error is not None and outcome.error.code in _FOUND_CODES


def call_ended(result: ToolCallResult, *, known: bool) -> None:
    """The call has its result: count it, and its error code if it has one.

    ``known``: the plan found the tool (``tool_found``). Otherwise the name is the model's,
    whatever the call ended with (a refused plan, arguments refused before it, a cancellation),
    and its label is ``unknown``.
    """
    code = result.error.code if result.error else None
    tool = result.tool if known else UNKNOWN_TOOL
    _count(CALLS, {"tool": tool, "status": result.status.value})
    if code is not None:
        _count(CALL_ERRORS, {"tool": tool, "code": code.value})
    _span(
        SPAN_RESULT,
        result.call_id,
        tool,
        result.capabilities,
        status=result.status.value,
        **({"error_code": code.value} if code is not None else {}),
    )
    # The SDK's workflow logger skips replays too, and adds the workflow's details. Asked first,
    # so that a worker not logging at INFO does not build the record's fields for every call.
    if not workflow.logger.isEnabledFor(logging.INFO):
        return
    workflow.logger.info(
        "%s call %s ended: %s%s",
        result.tool,
        result.call_id,
        result.status.value,
        f": {code.value}" if code is not None else "",
        extra={
            "tool": tool,
            "call_id": result.call_id,
            "workflow_id": result.workflow_id,
            "status": result.status.value,
            "error_code": code.value if code is not None else None,
        },
    )


def errors_at_zero(meter: MetricMeter, tools: Iterable[str]) -> None:
    """Put ``CALL_ERRORS`` at zero for each of ``tools`` and each code a call of a tool the
    deployment has can end with, so that the series exist before the first error (and a rule on
    their increase sees it). Outside workflow code: ``meter`` is the worker's runtime meter with
    the labels ``workflow.metric_meter()`` adds (``namespace``, ``task_queue``,
    ``workflow_type``), so that each is the series a call later counts in."""
    counter = meter.create_counter(CALL_ERRORS, _COUNTERS[CALL_ERRORS])
    for tool in tools:
        for code in ErrorCode:
            if code is not ErrorCode.UNKNOWN_TOOL:  # such a call's label is ``unknown``
                counter.add(0, {"tool": tool, "code": code.value})


def _count(name: str, labels: Mapping[str, str]) -> None:
    if _replaying():
        return
    workflow.metric_meter().create_counter(name, _COUNTERS[name]).add(1, dict(labels))


def _replaying() -> bool:
    # The meter skips replays itself; asking first saves creating the metric for nothing.
    return workflow.unsafe.is_replaying()


def _span(
    name: str, call_id: str, tool: str, capabilities: Sequence[str], **extra: str | bool | float
) -> None:
    # Only under the SDK's tracing interceptor: without it ``completed_span`` would fall back to
    # the global tracer, replays included. ``_from_context`` is how ``completed_span`` itself
    # finds the interceptor; the tracing tests fail if it moves.
    tracing = _tracing()
    if tracing is None or tracing[0]._from_context() is None:
        return
    completed_span = tracing[1]
    # The call id is for finding a trace from a model's tool-call id; spans may carry it, metric
    # labels never do.
    attributes: dict[str, Any] = {"toolcalls.tool": tool, "toolcalls.call_id": call_id}
    if capabilities:
        attributes["toolcalls.capabilities"] = list(capabilities)
    attributes.update({f"toolcalls.{key}": value for key, value in extra.items()})
    completed_span(name, attributes=attributes)


_TRACING: tuple[Any, ...] | None = None
"""What ``_tracing`` found: unset until the first span, empty without the otel extra."""


def _tracing() -> tuple[Any, ...] | None:
    """The SDK's ``TracingWorkflowInboundInterceptor`` and ``completed_span``, imported at the
    first span rather than with this module: OpenTelemetry takes a tenth of a second of CPU to
    import, which a process that runs no call (each ``toolcalls`` command but the servers) would
    pay for nothing. ``None`` without the otel extra."""
    global _TRACING
    if _TRACING is None:
        try:
            from temporalio.contrib.opentelemetry import TracingWorkflowInboundInterceptor
            from temporalio.contrib.opentelemetry.workflow import completed_span
        except ImportError:  # the otel extra is not installed: no spans
            _TRACING = ()
        else:
            _TRACING = (TracingWorkflowInboundInterceptor, completed_span)
    return _TRACING or None
