"""The forms ``toolcalls mcp`` shows through MCP elicitation, and what their answers mean.

Two forms, both in MCP's flat form schema (strings and enums only):

- **a question** (``ask_user``): the question, a free-text answer and, when the model suggested
  options, a choice among them (suggestions never restrict the answer, so the text wins when both
  are given). Decline and cancel both decline the question, and so does an empty form.
- **an approval** (``[mcp] approve_via_elicitation``): the tool, its arguments, capabilities, why
  it needs approval and the prepared preview, and approve or deny with an optional reason.
  Declining the form denies the call; cancelling (dismissing) it decides nothing, and the call
  waits for a decision from the inbox, the CLI or an application.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types

from toolcalls.worker.mcp.handover import inbox_message
from toolcalls.worker.render import compact, shorten, when
from toolcalls.workflows.models.approval import MAX_REASON_CHARS, ApprovalRequest
from toolcalls.workflows.models.question import (
    MAX_ANSWER_CHARS,
    UserQuestion,
)

PREVIEW_CHARS = 4_000
"""The approval form shows each preview artifact's text up to this many characters."""
ARGUMENTS_CHARS = 2_000
DECLINED_REASON = "declined in the MCP client"


def takes_forms(session: Any) -> bool:
    """Whether the client of ``session`` declared form elicitation.

    A client that declares ``elicitation: {}`` (before modes existed) takes forms.
    """
    capabilities: types.ClientCapabilities | None = session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


@dataclass(frozen=True)
class Form:
    """One form for the MCP user: a question or an approval, and the request it answers."""

    kind: Literal["question", "approval", "inbox"]
    request_id: str
    digest: str | None
    """The approved call's digest (approvals): a decision binds to what the form showed."""
    message: str
    schema: dict[str, Any]
    url: str | None = None
    """The link an ``inbox`` form opens (``toolcalls.worker.mcp.handover``): it asks nothing."""

    @classmethod
    def of_question(cls, question: UserQuestion) -> Form:
        return cls("question", question.request_id, None, *question_form(question))

    @classmethod
    def of_approval(cls, request: ApprovalRequest) -> Form:
        return cls("approval", request.request_id, request.digest, *approval_form(request))

    @classmethod
    def of_inbox(cls, request: ApprovalRequest, url: str) -> Form:
        return cls("inbox", request.request_id, None, inbox_message(request), {}, url)


def question_form(question: UserQuestion) -> tuple[str, dict[str, Any]]:
    """The message and schema that ask ``question``."""
    properties: dict[str, Any] = {
        "answer": {
            "type": "string",
            "title": "Your answer",
            "maxLength": MAX_ANSWER_CHARS,
        }
    }
    if question.options:
        properties["choice"] = {
            "type": "string",
            "title": "Or choose one",
            "enum": list(question.options),
        }
    return question.question, {"type": "object", "properties": properties}


def question_answer(result: types.ElicitResult) -> str | None:
    """The answer an elicitation result gives a question; ``None`` declines it."""
    if result.action != "accept" or not result.content:
        return None
    for key in ("answer", "choice"):
        value = result.content.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


@dataclass(frozen=True)
class Verdict:
    """What the MCP user decided on an approval form; ``approved`` is ``None`` if nothing."""

    approved: bool | None
    reason: str | None = None


def approval_form(request: ApprovalRequest) -> tuple[str, dict[str, Any]]:
    """The message (the call and its preview) and schema that ask for a decision."""
    lines = [
        f"Approve this {request.tool} call?",
        f"arguments: {shorten(compact(request.arguments), ARGUMENTS_CHARS)}",
    ]
    if request.capabilities:
        lines.append(f"capabilities: {', '.join(request.capabilities)}")
    if request.reasons:
        lines.append(f"why approval: {'; '.join(request.reasons)}")
    for artifact in request.preview:
        text = artifact.text if artifact.text is not None else compact(artifact.data or {})
        if len(text) > PREVIEW_CHARS:
            text = text[:PREVIEW_CHARS] + f"\n… ({len(text) - PREVIEW_CHARS} more characters)"
        lines.append(f"{artifact.title}:\n{text}")
    if request.expires_at is not None:
        lines.append(f"expires: {when(request.expires_at)}")
    schema = {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "oneOf": [
                    {"const": "approve", "title": "Approve"},
                    {"const": "deny", "title": "Deny"},
                ],
            },
            "reason": {"type": "string", "title": "Reason", "maxLength": MAX_REASON_CHARS},
        },
        "required": ["decision"],
    }
    return "\n".join(lines), schema


def approval_verdict(result: types.ElicitResult) -> Verdict:
    """What an elicitation result decides (see the module docstring)."""
    if result.action == "decline":
        return Verdict(approved=False, reason=DECLINED_REASON)
    if result.action != "accept" or not result.content:
        return Verdict(approved=None)
    decision = result.content.get("decision")
    if decision not in ("approve", "deny"):
        return Verdict(approved=None)
    reason = result.content.get("reason")
    text = reason.strip()[:MAX_REASON_CHARS] if isinstance(reason, str) else ""
    return Verdict(approved=decision == "approve", reason=text or None)


def may_decide(identity: str, request: ApprovalRequest) -> bool:
    """Whether ``identity`` may still decide ``request`` (the workflow checks it again)."""
    if request.approvers is not None and identity not in request.approvers:
        return False
    return identity not in request.approved_by
