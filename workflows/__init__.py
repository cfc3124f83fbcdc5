"""ToolCallWorkflow, its pure policy, the wire models, and the ways to reach a call.

- from a parent workflow: ``ToolCalls`` (child workflows, a shared ``CallBudget``);
- from an application or UI: ``ToolCallClient`` (start, call, pending, status, decide, answer).
"""

from workflows.client import (
    CallView,
    Delivery,
    NoPendingRequest,
    Outcome,
    PendingCall,
    ToolCallClient,
)
from workflows.models import (
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
from workflows.parent import BudgetUsage, CallBudget, ToolCalls
from workflows.tool_call import ToolCallWorkflow

__all__ = [
    "ApprovalDecision",
    "ApprovalRecord",
    "ApprovalRequest",
    "AskUserOutput",
    "BudgetUsage",
    "CallBudget",
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
    "PendingCall",
    "Phase",
    "ToolCallClient",
    "ToolCallRequest",
    "ToolCallResult",
    "ToolCallWorkflow",
    "ToolCalls",
    "ToolError",
    "UserAnswer",
    "UserQuestion",
]
