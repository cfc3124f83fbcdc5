"""ToolCallWorkflow, its pure policy, and the wire models every caller uses."""

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
from workflows.tool_call import ToolCallWorkflow

__all__ = [
    "ApprovalDecision",
    "ApprovalRecord",
    "ApprovalRequest",
    "AskUserOutput",
    "CallEvent",
    "CallState",
    "CallStatus",
    "CapabilityPolicy",
    "DecisionInput",
    "Effect",
    "ErrorCode",
    "Phase",
    "ToolCallRequest",
    "ToolCallResult",
    "ToolCallWorkflow",
    "ToolError",
    "UserAnswer",
    "UserQuestion",
]
