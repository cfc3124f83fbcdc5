"""ToolCallWorkflow, its pure policy, the wire models, and the ways to reach a call.

- from a parent workflow: ``ToolCalls`` (child workflows, a shared ``CallBudget``);
- from an application or UI: ``ToolCallClient`` (start, call, pending, status, decide, answer).

The parent helpers and the client are imported on first use: a sandboxed workflow that imports
this package (every ``ToolCallWorkflow`` run does) should not pay for the client's imports.
"""

from typing import Any

from toolcalls.workflows.models import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    AskUserOutput,
    CallEvent,
    CallState,
    CallStatus,
    CapabilityPolicy,
    DecisionInput,
    Effect,
    ErrorCode,
    Phase,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
    UserAnswer,
    UserQuestion,
)
from toolcalls.workflows.tool_call import ToolCallWorkflow

__all__ = [
    "ApprovalDecision",
    "ApprovalRecord",
    "ApprovalRequest",
    "AskUserOutput",
    "BudgetUsage",
    "CallBudget",
    "CallConflict",
    "CallEvent",
    "CallState",
    "CallStatus",
    "CallView",
    "CapabilityPolicy",
    "DecisionInput",
    "Delivery",
    "Effect",
    "ErrorCode",
    "NoPendingRequest",
    "Outcome",
    "PayloadTooLarge",
    "PendingCall",
    "Phase",
    "Started",
    "ToolCallClient",
    "ToolCallRequest",
    "ToolCallResult",
    "ToolCallWorkflow",
    "ToolCalls",
    "ToolError",
    "UserAnswer",
    "UserQuestion",
]

_LAZY = {
    "BudgetUsage": "toolcalls.workflows.parent",
    "CallBudget": "toolcalls.workflows.parent",
    "ToolCalls": "toolcalls.workflows.parent",
    "CallConflict": "toolcalls.workflows.views",
    "CallView": "toolcalls.workflows.views",
    "Delivery": "toolcalls.workflows.views",
    "NoPendingRequest": "toolcalls.workflows.views",
    "Outcome": "toolcalls.workflows.views",
    "PayloadTooLarge": "toolcalls.workflows.limits",
    "PendingCall": "toolcalls.workflows.views",
    "Started": "toolcalls.workflows.views",
    "ToolCallClient": "toolcalls.workflows.client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolcalls.workflows' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
