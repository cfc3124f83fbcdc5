"""Text and JSON renderings of calls for the ``toolcalls`` command line.

Pure functions from the wire models to strings and JSON-ready dicts: no I/O, so the commands
decide where output goes and tests can read exactly what a user sees.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from toolcalls.activities.spec import ToolSpec
from toolcalls.workflows.models.approval import ApprovalRecord, ApprovalRequest, PreviewArtifact
from toolcalls.workflows.models.call import (
    CallEvent,
    CallState,
    ToolCallResult,
)
from toolcalls.workflows.models.grant import Grant
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.question import (
    UserQuestion,
)
from toolcalls.workflows.models.reconcile import Reconciliation, Settled
from toolcalls.workflows.reach.client import CallView, PendingCall

PREVIEW_CHARS = 72
"""A pending call's preview line is cut to this many characters in the ``pending`` table."""
DESCRIPTION_CHARS = 80


def compact(value: Any) -> str:
    """JSON on one line, keys in their order, non-ASCII kept readable."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def dumps(value: Any) -> str:
    """The ``--json`` form of a command's output."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def when(moment: datetime | None, *, never: str = "never") -> str:
    """A UTC timestamp to the second: ``2026-11-29T20:01:02Z``."""
    if moment is None:
        return never
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def elapsed(seconds: float) -> str:
    """``7s``, ``2m05s``, ``1h02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def shorten(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def _fields(rows: Iterable[tuple[str, str]], indent: str = "") -> list[str]:
    rows = list(rows)
    width = max((len(label) for label, _ in rows), default=0) + 1
    return [f"{indent}{label + ':':<{width}} {value}" for label, value in rows]


def _block(text: str, indent: str) -> list[str]:
    return [f"{indent}{line}" if line else "" for line in text.splitlines()]


def _output(value: Any) -> str:
    text = compact(value)
    if len(text) <= 100:
        return text
    return "\n" + "\n".join(_block(json.dumps(value, ensure_ascii=False, indent=2), "  "))


def _call_ids(workflow_id: str, call_id: str) -> str:
    if not call_id or call_id == workflow_id:
        return workflow_id
    return f"{workflow_id} (call id {call_id})"


def approval_text(record: ApprovalRecord) -> str:
    verdict = "approved" if record.approved else "denied"
    if record.response is not None:
        verdict = "answered in place of the tool"
    who = record.approver or "an unnamed approver"
    because = f": {record.reason}" if record.reason else ""
    return f"{verdict} by {who} via {record.via} at {when(record.decided_at)}{because}"


def result_text(result: ToolCallResult) -> str:
    """A ``ToolCallResult`` as a few labelled lines."""
    rows = [
        ("status", result.status.value),
        ("tool", result.tool),
        ("call", _call_ids(result.workflow_id, result.call_id)),
    ]
    if result.output is not None:
        rows.append(("output", _output(result.output)))
    if result.error is not None:
        error = result.error
        notes = ["retryable"] if error.retryable else []
        if error.fixable_args:
            notes.append("fix: " + ", ".join(error.fixable_args))
        extra = f" ({'; '.join(notes)})" if notes else ""
        rows.append(("error", f"{error.code.value}: {error.message}{extra}"))
    if result.approval is not None:
        rows.append(("approval", approval_text(result.approval)))
    if result.response is not None:
        rows.append(("response", result.response))
    rows.append(
        ("took", f"{result.run_seconds:.2f}s running, {result.waited_seconds:.2f}s waiting")
    )
    return "\n".join(_fields(rows))


def result_reason(result: ToolCallResult) -> str:
    """Why a call did not complete, on one line."""
    if result.error is None:
        return result.status.value
    return f"{result.status.value}: {result.error.code.value}: {shorten(result.error.message, 300)}"


def artifact_body(artifact: PreviewArtifact) -> str:
    """A preview artifact's first line of text (a diff's changed lines), or its data as JSON."""
    if artifact.text:
        lines = [line for line in artifact.text.splitlines() if line.strip()]
        if artifact.kind == "diff":
            # The file names and hunk ranges say little on one line (a new file's diff starts
            # "--- /dev/null"); the changed lines are what is being approved.
            changes = [line for line in lines if _changed_line(line)]
            kept = changes or [line for line in lines if not line.startswith(_DIFF_HEADERS)]
            return " ".join(kept)
        return lines[0] if lines else ""
    return compact(artifact.data) if artifact.data is not None else ""


_DIFF_HEADERS = ("--- ", "+++ ", "@@ ")


def _changed_line(line: str) -> bool:
    return line.startswith(("+", "-")) and not line.startswith(_DIFF_HEADERS)


def artifact_line(artifact: PreviewArtifact) -> str:
    """One preview artifact on one line, titled unless it is the call's arguments."""
    body = artifact_body(artifact)
    return body if artifact.kind == "arguments" else f"{artifact.title}: {body}"


def preview_line(call: PendingCall, width: int = PREVIEW_CHARS) -> str:
    """What the call waits on, in one line: its most specific preview, or its question."""
    if call.approval is not None:
        artifacts = call.approval.preview
        # The first artifact is the arguments; a prepared preview (a diff, a process) says more.
        text = artifact_line(artifacts[-1]) if artifacts else compact(call.approval.arguments)
        return shorten(text, width)
    if call.question is not None:
        options = f" [{', '.join(call.question.options)}]" if call.question.options else ""
        return shorten(call.question.question + options, width)
    return ""


def _waiting_for(call: PendingCall) -> str:
    return "approval" if call.approval is not None else "answer"


def may_decide(pending: ApprovalRequest | None) -> str:
    """Who may decide a pending approval, as the configuration names them."""
    if pending is None or pending.approvers is None:
        return "anyone"
    who = ", ".join(pending.approvers_shown or pending.approvers) or "no one"
    if pending.min_approvals > 1:
        who += f" ({len(pending.approved_by)} of {pending.min_approvals} approved)"
    return who


def grants_table(grants: Sequence[Grant]) -> str:
    """The ``grants list`` listing."""
    if not grants:
        return "no standing grants are in force"
    header = ("GRANT ID", "TOOL", "SCOPE", "ARGUMENTS", "BY", "EXPIRES")
    rows = [header] + [
        (
            grant.grant_id,
            grant.tool,
            grant.scope.value if grant.parent_id is None else f"parent {grant.parent_id}",
            "any" if grant.digest is None else "the same",
            grant.approver or "-",
            when(grant.expires_at),
        )
        for grant in grants
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )


def pending_table(calls: Sequence[PendingCall]) -> str:
    """The ``pending`` listing: one call per row, aligned columns."""
    if not calls:
        return "no calls are waiting for an approval or an answer"
    header = (
        "WORKFLOW ID",
        "TOOL",
        "CAPABILITIES",
        "WAITING FOR",
        "WHO MAY DECIDE",
        "EXPIRES",
        "PREVIEW",
    )
    rows = [header] + [
        (
            call.workflow_id,
            call.tool,
            ",".join(call.capabilities) or "-",
            _waiting_for(call),
            may_decide(call.approval) if call.approval is not None else "-",
            when(call.expires_at),
            preview_line(call),
        )
        for call in calls
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )


def pending_json(call: PendingCall) -> dict[str, Any]:
    waiting = call.approval or call.question
    return {
        "workflow_id": call.workflow_id,
        "tool": call.tool,
        "capabilities": call.capabilities,
        "phase": call.phase.value,
        "waiting_for": _waiting_for(call),
        "may_decide": may_decide(call.approval) if call.approval is not None else None,
        "request_id": waiting.request_id if waiting else None,
        "expires_at": call.expires_at.isoformat() if call.expires_at else None,
        "preview": preview_line(call, width=200),
        "started_at": call.started_at.isoformat(),
        "parent_id": call.parent_id,
        "inline": call.inline,
        "approval": call.approval.model_dump(mode="json") if call.approval else None,
        "question": call.question.model_dump(mode="json") if call.question else None,
    }


def _approval_lines(pending: ApprovalRequest) -> list[str]:
    lines = ["pending approval:"]
    lines += _fields(
        [
            ("request", pending.request_id),
            ("digest", pending.digest),
            ("acts for", principal_text(pending.principal)),
            ("capabilities", ", ".join(pending.capabilities) or "none"),
            ("reasons", "; ".join(pending.reasons)),
            ("may decide", may_decide(pending)),
            ("requested", when(pending.requested_at)),
            ("expires", when(pending.expires_at)),
        ],
        "  ",
    )
    lines.append("  preview:")
    for artifact in pending.preview:
        if artifact.text and "\n" in artifact.text.strip():
            lines.append(f"    {artifact.title}:")
            lines += _block(artifact.text.rstrip("\n"), "      ")
        else:
            lines.append(f"    {artifact.title}: {artifact_body(artifact)}")
    return lines


def _question_lines(question: UserQuestion) -> list[str]:
    rows = [
        ("request", question.request_id),
        ("question", question.question),
        ("options", ", ".join(question.options) or "none"),
        ("asked", when(question.asked_at)),
        ("expires", when(question.expires_at)),
    ]
    return ["pending question:", *_fields(rows, "  ")]


def _event_lines(events: Sequence[CallEvent]) -> list[str]:
    width = max((len(event.kind.value) for event in events), default=0)
    stamp = "%Y-%m-%d %H:%M:%S"
    return ["events:"] + [
        f"  {event.at.astimezone(UTC).strftime(stamp)}  {event.kind.value:<{width}}  "
        f"{event.message}".rstrip()
        for event in events
    ]


def principal_text(principal: Principal | None) -> str:
    """A principal for people: its id and attributes."""
    if principal is None:
        return "no principal"
    attrs = ", ".join(f"{k}={v}" for k, v in sorted(principal.attributes.items()))
    return f"{principal.id} ({attrs})" if attrs else principal.id


def _acts_for(state: CallState) -> str:
    if state.principal is not None:
        return state.principal
    if state.result is not None and state.result.principal is not None:
        return state.result.principal
    pending = state.pending_approval
    return principal_text(pending.principal if pending else None)


def source_text(view: CallView) -> str:
    """Where ``show`` got its answer, in words."""
    if view.live:
        return "the worker serving the call (status query)"
    if view.state.result is not None:
        return "the call's result, from history"
    if view.running:
        return "no worker is serving this call: shown from describe, memo and history"
    return "the workflow ended without a result: shown from describe and history"


def view_text(view: CallView) -> str:
    """Everything ``show`` knows about a call."""
    state = view.state
    phase = state.phase.value.replace("_", " ")
    status = state.result.status.value if state.result else phase
    lines = _fields(
        [
            ("call", _call_ids(state.workflow_id, state.call_id)),
            ("tool", state.tool or "unknown"),
            ("acts for", _acts_for(state)),
            ("capabilities", ", ".join(state.capabilities) or "none"),
            ("status", status if view.running or state.result else f"{status} (ended)"),
            ("source", source_text(view)),
        ]
    )
    if state.pending_approval is not None:
        lines += _approval_lines(state.pending_approval)
    if state.pending_question is not None:
        lines += _question_lines(state.pending_question)
    if state.pending_connection is not None:
        consent = state.pending_connection
        until = consent.expires_at.isoformat() if consent.expires_at else "no time limit"
        lines += [
            f"waits for {consent.principal} to connect a {consent.provider} account "
            f"(until {until}):",
            f"  {consent.url}",
        ]
    if state.events:
        lines += _event_lines(state.events)
    if view.history_events:
        lines.append(f"history ({len(view.history_events)} events):")
        lines += [f"  {i:>3}  {name}" for i, name in enumerate(view.history_events, 1)]
    if state.result is not None:
        lines.append("result:")
        lines += _block(result_text(state.result), "  ")
    if view.reconciliation is not None:
        lines.append("reconciliation:")
        lines += _block(reconciliation_text(view.reconciliation), "  ")
    return "\n".join(lines)


def reconciliation_text(answer: Reconciliation) -> str:
    """What reconciling an uncertain call found, and what it checked."""
    said = {
        Settled.FOUND: "found: the effect happened",
        Settled.NOT_FOUND: "not found: still uncertain",
        Settled.UNCHECKED: "not checked: the lookup failed; still uncertain",
    }[answer.outcome]
    rows = [
        ("call", _call_ids(answer.workflow_id, answer.call_id)),
        ("tool", answer.tool),
        ("outcome", said),
        ("checked", answer.checked),
        ("at", when(answer.checked_at)),
    ]
    if answer.evidence:
        rows.append(("evidence", json.dumps(answer.evidence, ensure_ascii=False, default=str)))
    return "\n".join(_fields(rows))


def view_json(view: CallView) -> dict[str, Any]:
    return {
        "live": view.live,
        "running": view.running,
        "source": source_text(view),
        "state": view.state.model_dump(mode="json"),
        "history_events": view.history_events,
        "reconciliation": (
            view.reconciliation.model_dump(mode="json") if view.reconciliation else None
        ),
    }


def tools_text(specs: Iterable[ToolSpec]) -> str:
    """The enabled tools: name, side-effect class, capabilities, description."""
    rows = []
    for spec in specs:
        if callable(spec.capabilities):
            caps = "depends on the arguments"
        else:
            caps = ", ".join(sorted(spec.capabilities)) or "-"
        first = spec.description.split(". ")[0].rstrip(".") + "."
        rows.append((spec.name, spec.side_effect.value, caps, shorten(first, DESCRIPTION_CHARS)))
    if not rows:
        return "no tools are enabled"
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[3]])
        for row in rows
    )
