"""What visibility says about a call waiting for a human (``ToolCallClient.pending`` and
``pending_page``): its search attributes and memo, or a parent's inline calls in its memo."""

from __future__ import annotations

from temporalio.client import WorkflowExecution

from toolcalls.workflows.models.approval import ApprovalRequest
from toolcalls.workflows.models.call import (
    MEMO_METADATA,
    MEMO_PENDING_APPROVAL,
    MEMO_PENDING_QUESTION,
    SEARCH_CAPABILITIES,
    SEARCH_STATUS,
    SEARCH_TOOL,
    WORKFLOW_NAME,
    Phase,
)
from toolcalls.workflows.models.question import (
    UserQuestion,
)
from toolcalls.workflows.models.views import PendingCall, metadata_of, model_or_none
from toolcalls.workflows.reach.client_inline import pending_calls


async def waiting_calls(execution: WorkflowExecution) -> list[PendingCall]:
    """A listed call's pending approval or question, or a listed parent's inline calls waiting,
    from their search attributes and memo."""
    memo = await execution.memo()
    if execution.workflow_type != WORKFLOW_NAME:
        return pending_calls(execution, memo)
    attrs = execution.typed_search_attributes
    phase = Phase(attrs.get(SEARCH_STATUS) or Phase.AWAITING_APPROVAL.value)
    approval = model_or_none(ApprovalRequest, memo.get(MEMO_PENDING_APPROVAL))
    question = model_or_none(UserQuestion, memo.get(MEMO_PENDING_QUESTION))
    if approval is None and question is None:
        return []  # the memo and the attribute are written together; this one just moved on
    return [
        PendingCall(
            workflow_id=execution.id,
            tool=attrs.get(SEARCH_TOOL) or "",
            capabilities=list(attrs.get(SEARCH_CAPABILITIES) or []),
            phase=phase,
            approval=approval,
            question=question,
            started_at=execution.start_time,
            parent_id=execution.parent_id,
            metadata=metadata_of(memo.get(MEMO_METADATA)),
        )
    ]
