"""How ``ToolCallClient`` reaches inline calls: calls a parent workflow runs itself.

An inline call is known by the id a child would have, ``"{parent_workflow_id}/tools/{call_id}"``,
but no workflow has that id: when one does not exist and it has that form, the client reaches the
parent instead. What waits for a human is in the parent's memo (``inline_pending``), so listing,
``pending_approval`` and ``pending_question`` need no worker; decisions and answers go to the
parent's ``toolcalls.inline.*`` update when a worker serves it and its signal otherwise, exactly as
for a ``ToolCallWorkflow``; ``status`` asks the parent's worker (the ``toolcalls.inline.status``
query) and, without one, says what the memo says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from pydantic import BaseModel
from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    EditProposal,
)
from toolcalls.workflows.models.call import (
    CallState,
)
from toolcalls.workflows.models.inline import (
    INLINE_ANSWER,
    INLINE_ANSWER_SIGNAL,
    INLINE_APPROVE,
    INLINE_DECIDE,
    INLINE_DENY,
    INLINE_EDIT,
    INLINE_STATUS,
    MEMO_INLINE_PENDING,
    InlineAnswer,
    InlineDecision,
    InlineDecisionInput,
    InlineEdit,
    InlinePending,
    split_inline_id,
)
from toolcalls.workflows.models.question import (
    AskUserOutput,
    UserAnswer,
)
from toolcalls.workflows.models.views import (
    CallNotFound,
    CallView,
    Delivery,
    NoPendingRequest,
    Outcome,
    PendingCall,
)
from toolcalls.workflows.reach.delivery import (
    NO_ANSWER,
    queue_signal,
    signal_after_timeout,
    update_reason,
)

PARENT_ENDED = "the call's parent workflow has ended"


class Reach(Protocol):
    """What the inline routes use of the client that owns them (``ClientBase``): its Temporal
    client, its timeouts, and its way to tell whether a worker serves a task queue (a method, so
    that a client that knows better, a test's, say, answers for its inline calls too)."""

    client: Client
    probe_timeout: timedelta
    update_timeout: timedelta

    async def worker_serving(self, task_queue: str) -> bool: ...


@dataclass(frozen=True)
class InlineRef:
    """An inline call: its id, its parent's handle and its call id."""

    workflow_id: str
    parent: WorkflowHandle[Any, Any]
    call_id: str


def inline_ref(client: Client, workflow_id: str, missing: RPCError) -> InlineRef:
    """The inline call ``workflow_id`` names; ``missing`` (no workflow has the id) otherwise."""
    split = split_inline_id(workflow_id)
    if missing.status is not RPCStatusCode.NOT_FOUND or split is None:
        raise missing
    parent_id, call_id = split
    return InlineRef(workflow_id, client.get_workflow_handle(parent_id), call_id)


def pending_calls(execution: WorkflowExecution, memo: Mapping[str, Any]) -> list[PendingCall]:
    """A listed parent's inline calls waiting for a human, from its memo."""
    return [
        PendingCall(
            workflow_id=entry.workflow_id,
            tool=entry.tool,
            capabilities=entry.capabilities,
            phase=entry.phase,
            approval=entry.approval,
            question=entry.question,
            started_at=entry.started_at,
            parent_id=execution.id,
            inline=True,
        )
        for entry in _entries(memo)
    ]


class InlineRoutes:
    """What ``ClientBase`` does for an id that names an inline call."""

    def __init__(self, calls: Reach) -> None:
        self.calls = calls

    async def entry(self, ref: InlineRef) -> InlinePending | None:
        """The call's memo entry while it waits for a human; ``None`` otherwise."""
        description = await ref.parent.describe()
        if description.status is not WorkflowExecutionStatus.RUNNING:
            return None
        found = [e for e in _entries(await description.memo()) if e.call_id == ref.call_id]
        return found[0] if found else None

    async def pending_approval(self, ref: InlineRef) -> ApprovalRequest:
        entry = await self.entry(ref)
        if entry is not None and entry.omitted:
            state = await self._probe(ref, await ref.parent.describe())
            if state is not None and state.pending_approval is not None:
                return state.pending_approval
            raise NoPendingRequest(
                f"{ref.workflow_id}: the request is too large for the parent's memo; it can be "
                "read and decided while a worker serves the parent"
            )
        if entry is None or entry.approval is None:
            raise NoPendingRequest(f"{ref.workflow_id}: no approval is pending")
        return entry.approval

    async def pending_question(self, ref: InlineRef) -> Any:
        entry = await self.entry(ref)
        if entry is not None and entry.omitted:
            state = await self._probe(ref, await ref.parent.describe())
            if state is not None and state.pending_question is not None:
                return state.pending_question
        if entry is None or entry.question is None:
            raise NoPendingRequest(f"{ref.workflow_id}: no question is pending")
        return entry.question

    async def decide(self, ref: InlineRef, decision: ApprovalDecision) -> Outcome:
        fields = decision.model_dump(exclude={"approved"})
        return await self._deliver(
            ref,
            INLINE_APPROVE if decision.approved else INLINE_DENY,
            InlineDecisionInput(call_id=ref.call_id, **fields),
            INLINE_DECIDE,
            InlineDecision(call_id=ref.call_id, approved=decision.approved, **fields),
            ApprovalRecord,
        )

    async def answer(self, ref: InlineRef, answer: UserAnswer) -> Outcome:
        sent = InlineAnswer(call_id=ref.call_id, **answer.model_dump())
        return await self._deliver(
            ref, INLINE_ANSWER_SIGNAL, sent, INLINE_ANSWER, sent, AskUserOutput
        )

    async def _deliver(
        self,
        ref: InlineRef,
        signal: str,
        queued: BaseModel,
        update_name: str,
        update: BaseModel,
        result_type: type[ApprovalRecord] | type[AskUserOutput],
    ) -> Outcome:
        """The parent's update when a worker serves it, else (or when the update times out) its
        signal, queued until one does; what the parent refuses comes back ``REJECTED``."""
        description = await ref.parent.describe()
        if description.status is not WorkflowExecutionStatus.RUNNING:
            raise NoPendingRequest(f"{ref.workflow_id}: {PARENT_ENDED}")
        if await self._probe(ref, description) is None:
            return await queue_signal(ref.parent, signal, queued, ended=PARENT_ENDED)
        try:
            record = await ref.parent.execute_update(
                update_name, update, result_type=result_type, rpc_timeout=self.calls.update_timeout
            )
        except WorkflowUpdateFailedError as exc:
            return Outcome(Delivery.REJECTED, reason=update_reason(exc))
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            return await signal_after_timeout(ref.parent, exc, signal, queued, ended=PARENT_ENDED)
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return Outcome(Delivery.REJECTED, reason=PARENT_ENDED)
            raise
        return Outcome(Delivery.ACCEPTED, record=record)

    async def edit(self, ref: InlineRef, proposal: EditProposal) -> ApprovalRequest:
        try:
            request: ApprovalRequest = await ref.parent.execute_update(
                INLINE_EDIT,
                InlineEdit(call_id=ref.call_id, **proposal.model_dump()),
                result_type=ApprovalRequest,
                rpc_timeout=self.calls.update_timeout,
            )
            return request
        except WorkflowUpdateFailedError as exc:
            raise NoPendingRequest(
                f"{ref.workflow_id}: edit refused: {update_reason(exc)}"
            ) from None

    async def status(self, ref: InlineRef) -> CallView:
        """The call's state from the parent's worker, else from the parent's memo."""
        try:
            description = await ref.parent.describe()
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                message = f"{ref.workflow_id}: no call or parent workflow has this id"
                raise CallNotFound(message) from None
            raise
        if description.status is not WorkflowExecutionStatus.RUNNING:
            raise CallNotFound(
                f"{ref.workflow_id}: its parent {ref.parent.id} has ended; an inline call's "
                "result went to the parent"
            )
        try:
            state = await self._live_state(ref, description)
        except WorkflowQueryFailedError:
            raise CallNotFound(
                f"{ref.workflow_id}: {ref.parent.id} has made no inline call {ref.call_id!r}"
            ) from None
        if state is not None:
            return CallView(state, live=True, running=state.result is None, history_events=[])
        found = [e for e in _entries(await description.memo()) if e.call_id == ref.call_id]
        if not found:
            raise CallNotFound(
                f"{ref.workflow_id}: not waiting for a human, and no worker serves its parent "
                f"{ref.parent.id} to say more"
            )
        entry = found[0]
        state = CallState(
            workflow_id=entry.workflow_id,
            call_id=entry.call_id,
            tool=entry.tool,
            phase=entry.phase,
            capabilities=entry.capabilities,
            pending_approval=entry.approval,
            pending_question=entry.question,
            events=[],
            result=None,
        )
        return CallView(state, live=False, running=True, history_events=[])

    async def _probe(
        self, ref: InlineRef, description: WorkflowExecutionDescription
    ) -> CallState | None:
        """``_live_state`` for a call that must exist: ``NoPendingRequest`` if it does not."""
        try:
            return await self._live_state(ref, description)
        except WorkflowQueryFailedError:
            raise NoPendingRequest(
                f"{ref.workflow_id}: {ref.parent.id} has made no inline call {ref.call_id!r}"
            ) from None

    async def _live_state(
        self, ref: InlineRef, description: WorkflowExecutionDescription
    ) -> CallState | None:
        """The call's state from the parent's worker, or ``None`` when none answers in time.

        Raises:
            WorkflowQueryFailedError: the parent has made no inline call of that id.
        """
        if not await self.calls.worker_serving(description.task_queue):
            return None
        try:
            state: CallState = await ref.parent.query(
                INLINE_STATUS,
                ref.call_id,
                result_type=CallState,
                rpc_timeout=self.calls.probe_timeout,
            )
        except RPCError as exc:
            if exc.status in NO_ANSWER:
                return None
            raise
        return state


def _entries(memo: Mapping[str, Any]) -> list[InlinePending]:
    return [InlinePending.model_validate(entry) for entry in memo.get(MEMO_INLINE_PENDING) or []]
