"""Handing a waiting approval to a person: a URL-mode elicitation that opens the approval inbox.

Unless the deployment lets the MCP user approve in the client (``[mcp] approve_via_elicitation``,
a form), a call that waits for an approval is handed over as a link to the call's page in the
inbox (``[mcp] inbox_url``), where the people ``[approvers]`` names log in and decide. The client
shows the message and offers to open the link; its answer (accept, decline, cancel) only says
whether the user went there. It is never a decision: the call waits until someone decides in the
inbox (or the CLI, or an application), whatever the client answers.
"""

from __future__ import annotations

import mcp_types as types

from toolcalls.workflows.models.approval import ApprovalRequest


def takes_links(session: object) -> bool:
    """Whether the client of ``session`` declared URL-mode elicitation."""
    capabilities: types.ClientCapabilities | None = getattr(session, "client_capabilities", None)
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and elicitation.url is not None


def inbox_message(request: ApprovalRequest) -> str:
    """What the user reads beside the link: what waits, and who may decide."""
    who = ", ".join(request.approvers_shown or request.approvers or []) or "anyone allowed"
    text = f"This {request.tool} call waits for an approval by {who}."
    if request.min_approvals > 1:
        text += f" {len(request.approved_by)} of {request.min_approvals} have approved."
    return text + (
        " Open the approval inbox to see what it would do and decide there; opening the link "
        "decides nothing."
    )


def inbox_elicitation(
    request: ApprovalRequest, url: str, elicitation_id: str | None = None
) -> types.ElicitRequestURLParams:
    """The URL-mode elicitation that opens the call's page in the inbox."""
    return types.ElicitRequestURLParams(
        message=inbox_message(request), url=url, elicitation_id=elicitation_id
    )
