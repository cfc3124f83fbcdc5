"""A call's ``ToolCallResult`` as an MCP ``CallToolResult``.

A completed call returns the tool's output as structured content (it matches the tool's output
schema) and as JSON text for clients that read only text. Every other status is an MCP tool error
(``isError``): the model sees the typed error code and message, whether it may retry and which
arguments to fix, and any partial output (a canceled command's, say). The result's ``_meta``
names the workflow, so a client can find the call in Temporal or the inbox.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallResult, ToolError

META_WORKFLOW_ID = "toolcalls/workflow_id"
META_STATUS = "toolcalls/status"


def call_result(result: ToolCallResult) -> types.CallToolResult:
    """The MCP result of a call that ended."""
    meta = {META_WORKFLOW_ID: result.workflow_id, META_STATUS: result.status.value}
    if result.status is CallStatus.COMPLETED:
        output = result.output if isinstance(result.output, dict) else {"result": result.output}
        return types.CallToolResult(
            content=[types.TextContent(text=_json(output))],
            structured_content=output,
            _meta=meta,
        )
    error = result.error or ToolError(code=ErrorCode.INTERNAL, message="the call ended without one")
    return _error(error, result.status.value, result.workflow_id, result.output, meta)


def tool_error(
    code: ErrorCode, message: str, *, workflow_id: str | None = None, retryable: bool = False
) -> types.CallToolResult:
    """An MCP tool error for a call that could not be started or followed."""
    meta = {META_WORKFLOW_ID: workflow_id} if workflow_id else {}
    error = ToolError(code=code, message=message, retryable=retryable)
    return _error(error, CallStatus.FAILED.value, workflow_id, None, meta)


def _error(
    error: ToolError,
    status: str,
    workflow_id: str | None,
    output: Any,
    meta: dict[str, Any],
) -> types.CallToolResult:
    notes = ["retryable"] if error.retryable else []
    if error.fixable_args:
        notes.append("fix: " + ", ".join(error.fixable_args))
    text = f"{status}: {error.code.value}: {error.message}"
    if notes:
        text += f" ({'; '.join(notes)})"
    structured: dict[str, Any] = {"status": status, "error": error.model_dump(mode="json")}
    if workflow_id:
        structured["workflow_id"] = workflow_id
    content: list[types.ContentBlock] = [types.TextContent(text=text)]
    if output is not None:
        structured["output"] = output
        content.append(types.TextContent(text="partial output: " + _json(output)))
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=True, _meta=meta or None
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
