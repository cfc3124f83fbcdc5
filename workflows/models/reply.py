"""What a model reads back from a call: one mapping of ``ToolCallResult`` for every front.

The agent-framework adapters (``toolcalls.agents``) and the MCP front give a model the same words
for the same outcome, so a prompt that handles one handles all:

- ``completed``: the tool's output as JSON; when the tool cut it short (``"truncated": true``),
  a last line says so and how to see the rest;
- ``denied``: who decided and why. A human's denial carries the approver's reason, which is
  written for the model; a policy, budget or quota denial carries the rule (a quota's says when
  to try again). A person's answer in place of the tool (``responded``) is not an error: the
  model reads the answer, marked as a person's;
- ``failed``: the typed error, and which arguments to fix when the model can (``fixable_args``),
  in which case ``retry`` is true: the model should call again with fixed arguments;
- ``timed_out``: whether the tool never ran (no decision in time) or ran out of time;
- ``canceled``: that it was stopped, with any partial output;
- ``uncertain``: the write may have happened; the model must not repeat it and should ask the user.

Pure and deterministic: it runs inside workflows (an agent's, calling tools through ``ToolCalls``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallResult, ToolError

TRUNCATED_NOTE = (
    "note: this output was cut short at the tool's limit; ask for a smaller part "
    "(a range, an offset or a narrower query) to see the rest"
)
UNCERTAIN_NOTE = (
    "the action may have happened: do not repeat it; tell the user it is uncertain and let them "
    "check"
)
RESPONDED_NOTE = "a person answered in place of the tool (it did not run): "
NEVER_RAN = frozenset(
    {
        ErrorCode.UNKNOWN_TOOL,
        ErrorCode.INVALID_ARGUMENTS,
        ErrorCode.POLICY_DENIED,
        ErrorCode.APPROVAL_DENIED,
        ErrorCode.APPROVAL_TIMED_OUT,
        ErrorCode.BUDGET_EXCEEDED,
        ErrorCode.QUOTA_EXCEEDED,
        ErrorCode.TOOL_UNAVAILABLE,
        ErrorCode.CONFIGURATION_ERROR,
    }
)
"""Errors that end a call before its tool ran."""


@dataclass(frozen=True)
class ModelReply:
    """A call's outcome as the model reads it.

    ``text`` is the tool message's content; ``data`` the same as JSON (``status``, and ``output``
    or ``error``, ``note``; ``response`` and ``responded_by`` for an approver's answer) for fronts
    that send structured results. ``is_error`` is true for every status but ``completed`` and an
    approver's answer in place of the tool; ``retry`` when the model can fix its arguments and
    call again (``fixable_args``, named in the text).
    """

    status: CallStatus
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False
    retry: bool = False


def model_reply(result: ToolCallResult) -> ModelReply:
    """The model's reading of ``result`` (see the module's docstring)."""
    if result.status is CallStatus.COMPLETED:
        return _completed(result)
    # Only the workflow ends a call ``denied`` with a response; a tool that reports the code
    # itself ran, and reads as any failure.
    if result.status is CallStatus.DENIED and result.response is not None:
        return _responded(result, result.response)
    error = result.error or ToolError(code=ErrorCode.INTERNAL, message="the call ended without one")
    lines = [f"{result.status.value}: {error.code.value}: {error.message}{_notes(error)}"]
    data: dict[str, Any] = {"status": result.status.value, "error": error.model_dump(mode="json")}
    note = _note(result, error)
    if note:
        lines.append(note)
        data["note"] = note
    if result.output is not None:
        lines.append("partial output: " + _json(result.output))
        data["output"] = result.output
    retry = bool(error.fixable_args) and result.status is CallStatus.FAILED
    return ModelReply(result.status, "\n".join(lines), data, is_error=True, retry=retry)


def _completed(result: ToolCallResult) -> ModelReply:
    output = result.output if isinstance(result.output, dict) else {"result": result.output}
    text = _json(output)
    data: dict[str, Any] = {"status": result.status.value, "output": output}
    if output.get("truncated") is True:
        text += "\n" + TRUNCATED_NOTE
        data["note"] = TRUNCATED_NOTE
    return ModelReply(result.status, text, data)


def _responded(result: ToolCallResult, response: str) -> ModelReply:
    """A person's answer in place of the tool: the tool's output as far as the model goes."""
    by = result.approval.approver if result.approval is not None else ""
    data: dict[str, Any] = {"status": result.status.value, "response": response, "responded_by": by}
    return ModelReply(result.status, RESPONDED_NOTE + response, data)


def _notes(error: ToolError) -> str:
    notes = ["retryable"] if error.retryable else []
    if error.fixable_args:
        notes.append("fix: " + ", ".join(error.fixable_args))
    return f" ({'; '.join(notes)})" if notes else ""


def _note(result: ToolCallResult, error: ToolError) -> str | None:
    """A sentence on what the outcome means for the model's next step, where it is not obvious."""
    if result.status is CallStatus.UNCERTAIN:
        return UNCERTAIN_NOTE
    if error.code is ErrorCode.APPROVAL_DENIED:
        reason = result.approval.reason if result.approval else None
        said = f"the approver said: {reason}" if reason else "the approver gave no reason"
        return f"a person denied this call and the tool did not run; {said}"
    if error.code in NEVER_RAN:
        return "the tool did not run"
    if result.status is CallStatus.FAILED and error.fixable_args:
        return "call the tool again with " + ", ".join(error.fixable_args) + " fixed"
    return None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
