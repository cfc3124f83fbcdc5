"""What the inbox shows, as plain data for its templates: previews, times, rows of the lists.

Pure functions from the wire models to small dataclasses; the templates lay them out and
autoescape every string, so nothing a call carries (arguments, file content, a mail body) is ever
markup. Each preview kind a tool's ``prepare`` returns has its reading here: a unified diff line
by line, a process as argv / cwd / environment / limits with the variables the call gave marked,
an HTTP request, an email, a calendar event, a query; anything else as its text and data.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from toolcalls.activities.processes.code_env import loads_code
from toolcalls.worker.inbox import words
from toolcalls.worker.render import elapsed, may_decide, preview_line, when
from toolcalls.workflows.models.approval import ApprovalRecord, ApprovalRequest, PreviewArtifact
from toolcalls.workflows.models.call import CallEvent, EventKind, ToolCallResult
from toolcalls.workflows.reach.client import PendingCall

_NEVER = datetime.max.replace(tzinfo=UTC)
MAX_SHOWN_CHARS = 200_000
"""A preview text or JSON block past this is cut on the page (the arguments keep all of it)."""


@dataclass(frozen=True)
class Row:
    """A labelled value; ``mark`` flags it for the eye (``call``: given by the call, not the
    deployment; ``code``: makes programs load code)."""

    label: str
    value: str
    mark: str = ""
    note: str = ""


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """``file``, ``hunk``, ``add``, ``del``, ``context`` or ``note``."""
    text: str


@dataclass(frozen=True)
class Preview:
    """One preview artifact as the page lays it out; empty parts are left out."""

    kind: str
    title: str
    rows: list[Row] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    env: list[Row] = field(default_factory=list)
    env_note: str = ""
    diff: list[DiffLine] = field(default_factory=list)
    body_label: str = ""
    body: str | None = None
    data: str | None = None
    """The artifact's data as JSON, for whoever wants every field."""


def pretty(value: Any) -> str:
    """JSON for people: indented, keys in their order, non-ASCII kept."""
    return _cut(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _cut(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return text[:MAX_SHOWN_CHARS] + f"\n... ({len(text) - MAX_SHOWN_CHARS} more characters)"


def _text(value: Any) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def diff_lines(text: str) -> list[DiffLine]:
    """A unified diff, each line classified for colour."""
    lines = []
    for line in _cut(text).splitlines():
        if line.startswith(("--- ", "+++ ")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith(("\\", "... ", "binary content:")):
            kind = "note"
        else:
            kind = "context"
        lines.append(DiffLine(kind, line))
    return lines


def _diff(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    rows = [Row(label, _text(data[key])) for key, label in _DIFF_FIELDS if key in data]
    if data.get("diff_truncated"):
        rows.append(Row("diff", "truncated: the change is larger than shown", mark="call"))
    return Preview("diff", artifact.title, rows=rows, diff=diff_lines(artifact.text or ""))


_DIFF_FIELDS = (
    ("path", "path"),
    ("action", "action"),
    ("preimage_size", "bytes before"),
    ("postimage_size", "bytes after"),
    ("mode", "mode"),
    ("replacements", "replacements"),
    ("preimage_sha256", "sha256 before"),
    ("postimage_sha256", "sha256 after"),
    ("current_sha256", "sha256 now"),
    ("restored_sha256", "sha256 restored"),
)


def _process(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    # A command's preview nests the spec; git's is the spec itself.
    nested = data.get("spec")
    spec: Mapping[str, Any] = nested if isinstance(nested, dict) else data
    given = {str(name) for name in data.get("caller_env") or []}
    argv = [str(arg) for arg in spec.get("argv") or []]
    rows = [Row("cwd", _text(spec.get("cwd")))]
    executable = data.get("executable")
    if executable and (not argv or executable != argv[0]):
        rows.append(Row("runs", _text(executable)))
    if data.get("host"):
        rows.append(Row("host", f"{data['host']} ({data.get('boundary') or 'a host process'})"))
    limits = []
    if spec.get("timeout_seconds") is not None:
        limits.append(f"{spec['timeout_seconds']:g} s")
    if data.get("kill_grace_seconds") is not None:
        limits.append(
            f"then SIGTERM to the process group, SIGKILL {data['kill_grace_seconds']:g} s later"
        )
    if spec.get("max_output_bytes") is not None:
        limits.append(f"{spec['max_output_bytes']} bytes of output")
    if limits:
        rows.append(Row("limits", "; ".join(limits)))
    env = []
    for name, value in (spec.get("env") or {}).items():
        from_call = name in given
        what = loads_code(name) if from_call else None
        env.append(
            Row(
                name,
                str(value),
                mark="code" if what else ("call" if from_call else ""),
                note=f"given by the call; loads code ({what})"
                if what
                else ("given by the call" if from_call else ""),
            )
        )
    note = "marked: given by the call, not set by the deployment" if given else ""
    if not env:
        note = "empty: nothing is inherited"
    return Preview(
        "process", artifact.title, rows=rows, argv=argv, env=env, env_note=note, data=pretty(data)
    )


def _http(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    rows = [Row("method", _text(data.get("method"))), Row("URL", _text(data.get("url")))]
    rows += [
        Row("query", f"{pair.get('name')}={pair.get('value')}")
        for pair in data.get("query") or []
        if isinstance(pair, dict)
    ]
    names = data.get("header_names") or []
    rows.append(
        Row(
            "headers",
            ", ".join(map(str, names)) or "-",
            note="names only: values are the deployment's",
        )
    )
    if data.get("body_bytes"):
        rows.append(Row("body", f"{data['body_bytes']} bytes, sha256 {data.get('body_sha256')}"))
    if data.get("timeout_seconds") is not None:
        rows.append(Row("timeout", f"{data['timeout_seconds']:g} s"))
    body = _cut(artifact.text) if artifact.text else None
    return Preview(
        "http", artifact.title, rows=rows, body_label="body", body=body, data=pretty(data)
    )


def _email(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    text = (artifact.text or "").replace("\r\n", "\n")
    head, sep, body = text.partition("\n\n")
    rows = []
    if data:
        to = data.get("to")
        rows = [
            Row("From", _text(data.get("from") or "(the account of the configured token)")),
            Row("To", ", ".join(map(str, to)) if isinstance(to, list) else _text(to)),
            Row("Subject", _text(data.get("subject"))),
        ]
        if data.get("message_id"):
            rows.append(Row("Message-ID", _text(data["message_id"])))
        if data.get("mailbox"):
            rows.append(Row("Mailbox", _text(data["mailbox"])))
    else:
        for line in head.splitlines():
            label, _, value = line.partition(": ")
            rows.append(Row(label, value))
    return Preview(
        "email",
        artifact.title,
        rows=rows,
        body_label="message",
        body=_cut(body if sep else text),
        data=pretty(data) if data else None,
    )


def _calendar(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    def span(local: str, utc: str) -> str:
        shown = _text(data.get(local))
        return f"{shown} ({data[utc]})" if data.get(utc) else shown

    rows = [
        Row(
            "calendar",
            f"{_text(data.get('calendar'))} ({data.get('backend')}, {data.get('account')})",
        ),
        Row("title", _text(data.get("title"))),
        Row("start", span("start", "start_utc")),
        Row("end", span("end", "end_utc")),
        Row("location", _text(data.get("location"))),
    ]
    if data.get("creation_id"):
        rows.append(Row(f"creation id ({data.get('creation_id_is')})", _text(data["creation_id"])))
    return Preview(
        "calendar",
        artifact.title,
        rows=rows,
        body_label="description",
        body=_cut(str(data.get("description") or "")) or None,
        data=pretty(data),
    )


def _sql(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    rows = [Row(str(key).replace("_", " "), _text(value)) for key, value in data.items()]
    return Preview("sql", artifact.title, rows=rows, body_label="SQL", body=artifact.text or "")


def _generic(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    rows = [Row(str(key).replace("_", " "), _cut(_text(value))) for key, value in data.items()]
    body = _cut(artifact.text) if artifact.text else None
    return Preview(artifact.kind, artifact.title, rows=rows, body_label="text", body=body)


def _arguments(artifact: PreviewArtifact, data: Mapping[str, Any]) -> Preview:
    return Preview("arguments", artifact.title, body_label="arguments", body=pretty(dict(data)))


_KINDS: dict[str, Callable[[PreviewArtifact, Mapping[str, Any]], Preview]] = {
    "diff": _diff,
    "process": _process,
    "http_request": _http,
    "email": _email,
    "calendar_event": _calendar,
    "sql": _sql,
    "arguments": _arguments,
}


def preview(artifact: PreviewArtifact) -> Preview:
    """One artifact for the page; a kind without a reading of its own shows its text and data."""
    reading = _KINDS.get(artifact.kind, _generic)
    data = artifact.data or {}
    try:
        return reading(artifact, data)
    except (TypeError, ValueError, AttributeError, KeyError):
        # A tool of the deployment's own may shape its data differently: show it as it is.
        return _generic(artifact, data)


def previews(request: ApprovalRequest) -> list[Preview]:
    return [preview(artifact) for artifact in request.preview]


def age(moment: datetime | None, now: datetime) -> str:
    """``5m02s`` since ``moment``."""
    if moment is None:
        return "-"
    return elapsed(max((now - moment).total_seconds(), 0))


def expiry(moment: datetime | None, now: datetime) -> str:
    """``in 23h59m``, ``expired`` or ``never``."""
    if moment is None:
        return "never"
    left = (moment - now).total_seconds()
    return f"in {elapsed(left)}" if left > 0 else "expired"


@dataclass(frozen=True)
class ListedCall:
    """One row of the pending list."""

    workflow_id: str
    short_id: str
    tool: str
    capabilities: list[str]
    parent: str
    asked_by: str
    waiting_for: str
    age: str
    expires: str
    may_decide: str
    preview: str
    yours: bool
    """The signed-in user may act on it."""
    started_at: datetime
    expires_at: datetime | None


def may_act(name: str, call: PendingCall) -> bool:
    """Whether ``name`` may decide or answer ``call`` (the workflow checks the same)."""
    if call.approval is None:
        return call.question is not None
    return can_decide(name, call.approval)


def can_decide(name: str, request: ApprovalRequest) -> bool:
    """Whether the approver rules let ``name`` decide ``request`` now, and they have not yet."""
    allowed = request.approvers is None or name in request.approvers
    return allowed and name not in request.approved_by


def listed(call: PendingCall, name: str, now: datetime) -> ListedCall:
    waiting = call.approval or call.question
    asked = call.approval.requested_at if call.approval else None
    if call.question is not None:
        asked = call.question.asked_at
    return ListedCall(
        workflow_id=call.workflow_id,
        short_id=words.short_id(call.workflow_id),
        tool=call.tool,
        capabilities=call.capabilities,
        parent=call.parent_id or "-",
        asked_by=words.asked_by(call.parent_id, call.metadata),
        waiting_for="approval" if call.approval is not None else "answer",
        age=age(asked or call.started_at, now),
        expires=expiry(waiting.expires_at if waiting else None, now),
        may_decide=may_decide(call.approval) if call.approval is not None else "anyone",
        preview=preview_line(call, width=120),
        yours=may_act(name, call),
        started_at=asked or call.started_at,
        expires_at=call.expires_at,
    )


def sort_calls(rows: Iterable[ListedCall], order: str) -> list[ListedCall]:
    """``newest`` first, or ``expiring`` first (those that never expire last)."""
    if order == "expiring":
        return sorted(rows, key=lambda row: row.expires_at or _NEVER)
    return sorted(rows, key=lambda row: row.started_at, reverse=True)


@dataclass(frozen=True)
class Decision:
    """One line of who decided what: an approval, a denial, an answer, or a timeout."""

    at: datetime
    what: str
    by: str
    detail: str = ""


_QUESTION_EVENTS = {
    EventKind.QUESTION_ANSWERED: "answered",
    EventKind.QUESTION_DECLINED: "declined",
    EventKind.QUESTION_TIMED_OUT: "no answer in time",
    EventKind.APPROVAL_TIMED_OUT: "no decision in time",
}


def _record(record: ApprovalRecord) -> Decision:
    what = "approved" if record.approved else "denied"
    if record.via == "grant":
        what += " by a standing grant"
    detail = record.reason or ""
    if record.response is not None:
        what, detail = "replied instead", record.response
    return Decision(record.decided_at, what, record.approver or "-", detail)


def decisions(result: ToolCallResult) -> list[Decision]:
    """Every human decision a finished call records, in order."""
    records = list(result.approvals)
    if result.approval is not None and result.approval not in records:
        records.append(result.approval)
    found = [_record(record) for record in records]
    for event in result.events:
        what = _QUESTION_EVENTS.get(event.kind)
        if what is not None:
            by = event.message.removeprefix("by ") if event.message.startswith("by ") else "-"
            found.append(Decision(event.at, what, by, _answer(result, event)))
    return sorted(found, key=lambda decision: decision.at)


def _answer(result: ToolCallResult, event: CallEvent) -> str:
    if event.kind is EventKind.QUESTION_ANSWERED and isinstance(result.output, dict):
        return str(result.output.get("answer") or "")
    return ""


def events(items: Sequence[CallEvent]) -> list[Row]:
    return [Row(when(event.at), event.kind.value, note=event.message) for event in items]
