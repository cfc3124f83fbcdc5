"""ToolCallWorkflow, its pure policy, the wire models, and the ways to reach a call.

- from a parent workflow: ``ToolCalls`` (child workflows, a shared ``CallBudget``);
- from an application or UI: ``ToolCallClient`` (start, call, pending, status, decide, answer).

The parent helpers and the client are imported on first use: a sandboxed workflow that imports
this package (every ``ToolCallWorkflow`` run does) should not pay for the client's imports.
"""

from typing import Any

from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    DecisionInput,
)
from toolcalls.workflows.models.call import (
    CallEvent,
    CallState,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    Phase,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
)
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.question import (
    AskUserOutput,
    UserAnswer,
    UserQuestion,
)

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
    "Principal",
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
    "BudgetUsage": "toolcalls.workflows.reach.parent",
    "CallBudget": "toolcalls.workflows.reach.parent",
    "ToolCalls": "toolcalls.workflows.reach.parent",
    "CallConflict": "toolcalls.workflows.models.views",
    "CallView": "toolcalls.workflows.models.views",
    "Delivery": "toolcalls.workflows.models.views",
    "NoPendingRequest": "toolcalls.workflows.models.views",
    "Outcome": "toolcalls.workflows.models.views",
    "PayloadTooLarge": "toolcalls.workflows.models.limits",
    "PendingCall": "toolcalls.workflows.models.views",
    "Started": "toolcalls.workflows.models.views",
    "ToolCallClient": "toolcalls.workflows.reach.client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolcalls.workflows' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
