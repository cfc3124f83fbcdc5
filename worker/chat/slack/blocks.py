"""The Block Kit a pending request becomes in Slack: the message, its buttons, the reply form.

The message shows what the inbox shows (each preview artifact: its title and its text, or its data
as JSON) within Block Kit's limits: a section's text is at most 3,000 characters and a message at
most 50 blocks, so a longer artifact is cut and ends with a link to the call in the inbox, where
the whole preview is. Each button carries the call it decides: its workflow id, the request id and
the digest the message showed, so a click on a message whose request has since been decided or
replaced is recognised as stale.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolcalls.worker.render import may_decide, when
from toolcalls.workflows.models.approval import ApprovalRequest, PreviewArtifact

SECTION_TEXT_MAX = 3000
"""Block Kit: a section block's text."""
MAX_BLOCKS = 50
"""Block Kit: the blocks of one message."""
BUTTON_VALUE_MAX = 2000
"""Block Kit: a button's ``value``."""
PRIVATE_METADATA_MAX = 3000
"""Block Kit: a modal's ``private_metadata``."""
REPLY_INPUT_MAX = 3000
"""Block Kit: a ``plain_text_input``'s ``max_length`` (the call takes up to 4,000)."""
FALLBACK_TEXT_MAX = 300
"""The message's ``text``: what a notification shows, so kept short."""
FIXED_BLOCKS = 4
"""The blocks around the preview: the headline, who may decide, the status line, the buttons."""

APPROVE = "toolcalls_approve"
DENY = "toolcalls_deny"
REPLY = "toolcalls_reply"
"""The buttons' ``action_id``s."""
REPLY_VIEW = "toolcalls_reply"
"""The reply form's ``callback_id``."""
REPLY_BLOCK = "reply"
REPLY_INPUT = "text"

_HEADLINES = {
    "waiting": "A tool call waits for approval",
    "reminder": "Reminder: a tool call still waits for approval",
    "escalated": "Escalated: a tool call waits for approval",
}


@dataclass(frozen=True)
class CallRef:
    """What a button (or the reply form) decides: one request of one call, as it was shown."""

    workflow_id: str
    request_id: str
    digest: str

    def encode(self) -> str:
        value = json.dumps(
            {"w": self.workflow_id, "r": self.request_id, "d": self.digest}, separators=(",", ":")
        )
        if len(value) > BUTTON_VALUE_MAX:
            raise ValueError(f"slack: the call's id is too long for a button ({len(value)} chars)")
        return value

    @classmethod
    def decode(cls, value: object) -> CallRef:
        """Raises ``ValueError`` for anything but a value ``encode`` made."""
        try:
            data = json.loads(value) if isinstance(value, str) else {}
            return cls(str(data["w"]), str(data["r"]), str(data["d"]))
        except (ValueError, TypeError, KeyError):
            raise ValueError("the button does not name a call") from None


def escape(text: str) -> str:
    """Text for ``mrkdwn``: Slack reads ``&``, ``<`` and ``>`` as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _body(artifact: PreviewArtifact) -> str:
    if artifact.text is not None:
        return artifact.text
    return json.dumps(artifact.data or {}, ensure_ascii=False, indent=2, default=str)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def artifact_text(artifact: PreviewArtifact, link: str) -> str:
    """One artifact as a section's text, cut to ``SECTION_TEXT_MAX`` with a link to the rest."""
    head = f"*{escape(artifact.title)}*\n```"
    body = escape(_body(artifact)).replace("```", "'''")
    text = f"{head}{body}```"
    if len(text) <= SECTION_TEXT_MAX:
        return text
    more = f"```\n... cut here: <{link}|the whole preview is in the inbox>"
    # Cut on a line, and never inside an escape (``&amp;``).
    kept = body[: SECTION_TEXT_MAX - len(head) - len(more)]
    kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
    amp = kept.rfind("&")
    if amp != -1 and ";" not in kept[amp:]:
        kept = kept[:amp]
    return f"{head}{kept}{more}"


def preview_blocks(request: ApprovalRequest, link: str) -> list[dict[str, Any]]:
    """The request's preview, one section per artifact, within the message's block limit."""
    room = MAX_BLOCKS - FIXED_BLOCKS
    artifacts = request.preview
    blocks = [_section(artifact_text(artifact, link)) for artifact in artifacts[: room - 1]]
    if len(artifacts) > room - 1:
        rest = len(artifacts) - (room - 1)
        blocks.append(context(f"{rest} more parts of the preview: <{link}|open the inbox>"))
    return blocks


def buttons(request: ApprovalRequest) -> dict[str, Any]:
    """Approve, Deny and (when the rules allow answering in place of the tool) Reply."""
    value = CallRef(request.workflow_id, request.request_id, request.digest).encode()

    def button(label: str, action_id: str, style: str | None = None) -> dict[str, Any]:
        element = {
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": action_id,
            "value": value,
        }
        return element if style is None else {**element, "style": style}

    elements = [button("Approve", APPROVE, "primary"), button("Deny", DENY, "danger")]
    if request.respond:
        elements.append(button("Reply instead", REPLY))
    return {"type": "actions", "block_id": "toolcalls_decide", "elements": elements}


def request_message(
    request: ApprovalRequest,
    link: str,
    *,
    kind: str = "waiting",
    status: str | None = None,
    decidable: bool = True,
) -> tuple[str, list[dict[str, Any]]]:
    """The message's fallback text and blocks: the request, ``status`` (what became of it) under
    the preview, and the buttons while it is ``decidable``."""
    headline = _HEADLINES.get(kind, _HEADLINES["waiting"])
    caps = ", ".join(request.capabilities) or "no capabilities"
    text = f"{headline}: {request.tool} ({caps})"[:FALLBACK_TEXT_MAX]
    who = f"Who may decide: {escape(may_decide(request))}. Until {when(request.expires_at)}."
    blocks = [
        _section(f"*{escape(headline)}*: `{escape(request.tool)}` ({escape(caps)})"),
        context(f"{who} <{link}|Open in the inbox>"),
        *preview_blocks(request, link),
    ]
    if status is not None:
        blocks.append(context(escape(status)))
    if decidable:
        blocks.append(buttons(request))
    return text, blocks


def reply_view(ref: CallRef, channel: str, ts: str, tool: str) -> dict[str, Any]:
    """The form of "Reply instead": the text the model reads in place of the tool's output."""
    metadata = json.dumps(
        {"w": ref.workflow_id, "r": ref.request_id, "d": ref.digest, "c": channel, "t": ts},
        separators=(",", ":"),
    )
    if len(metadata) > PRIVATE_METADATA_MAX:
        raise ValueError("slack: the call's id is too long for the reply form")
    return {
        "type": "modal",
        "callback_id": REPLY_VIEW,
        "private_metadata": metadata,
        "title": {"type": "plain_text", "text": "Reply instead"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            context(f"The model reads it instead of `{escape(tool)}`'s output: it does not run."),
            {
                "type": "input",
                "block_id": REPLY_BLOCK,
                "label": {"type": "plain_text", "text": "Reply"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": REPLY_INPUT,
                    "multiline": True,
                    "max_length": REPLY_INPUT_MAX,
                },
            },
        ],
    }


@dataclass(frozen=True)
class ReplyForm:
    """A submitted reply form: the call, the message it came from, the text."""

    ref: CallRef
    channel: str
    ts: str
    text: str


def read_reply(view: object) -> ReplyForm:
    """The reply form of a ``view_submission``; ``ValueError`` for any other view."""
    if not isinstance(view, dict) or view.get("callback_id") != REPLY_VIEW:
        raise ValueError("not this deployment's reply form")
    try:
        meta = json.loads(view["private_metadata"])
        ref = CallRef(str(meta["w"]), str(meta["r"]), str(meta["d"]))
        value = view["state"]["values"][REPLY_BLOCK][REPLY_INPUT].get("value") or ""
        return ReplyForm(ref, str(meta["c"]), str(meta["t"]), str(value))
    except (ValueError, TypeError, KeyError, AttributeError):
        raise ValueError("not this deployment's reply form") from None
