"""A call's ``ToolCallResult`` as an MCP ``CallToolResult``.

A completed call returns the tool's output as structured content (it matches the tool's output
schema) and as JSON text for clients that read only text. Every other status is an MCP tool error
(``isError``). The text is what every front gives a model (``toolcalls.workflows.models.reply``):
the typed error code and message, whether it may retry and which arguments to fix, what the
outcome means (a person's denial and their reason; an uncertain write not to repeat), and any
partial output (a canceled command's, say). The result's ``_meta`` names the workflow, so a
client can find the call in Temporal or the inbox.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallResult, ToolError
from toolcalls.workflows.models.reply import model_reply

META_WORKFLOW_ID = "toolcalls/workflow_id"
META_STATUS = "toolcalls/status"


def call_result(result: ToolCallResult) -> types.CallToolResult:
    """The MCP result of a call that ended."""
    meta = {META_WORKFLOW_ID: result.workflow_id, META_STATUS: result.status.value}
    reply = model_reply(result)
    if result.status is CallStatus.COMPLETED:
        return types.CallToolResult(
            content=[types.TextContent(text=reply.text)],
            structured_content=reply.data["output"],
            _meta=meta,
        )
    structured = {**reply.data, "workflow_id": result.workflow_id}
    return types.CallToolResult(
        content=[types.TextContent(text=reply.text)],
        structured_content=structured,
        is_error=True,
        _meta=meta,
    )


def tool_error(
    code: ErrorCode, message: str, *, workflow_id: str | None = None, retryable: bool = False
) -> types.CallToolResult:
    """An MCP tool error for a call that could not be started or followed."""
    meta = {META_WORKFLOW_ID: workflow_id} if workflow_id else {}
    error = ToolError(code=code, message=message, retryable=retryable)
    structured: dict[str, Any] = {"status": CallStatus.FAILED.value}
    structured["error"] = error.model_dump(mode="json")
    if workflow_id:
        structured["workflow_id"] = workflow_id
    retry = " (retryable)" if retryable else ""
    text = f"{CallStatus.FAILED.value}: {code.value}: {message}{retry}"
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=structured,
        is_error=True,
        _meta=meta or None,
    )
