"""What every front's client does with a call once it exists: find a worker, decide, answer.

``ClientBase`` is the part of ``ToolCallClient`` (``toolcalls.workflows.reach.client``) that reaches
one call: ``decide`` uses the ``decide`` update when a worker serves the call (so a rejected
decision comes back with the validator's reason) and the signal when none does (the decision is
queued and applied when a worker returns).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.call.deadlines import LATE_UPDATE, deliver_by_id
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    DecisionInput,
    EditProposal,
    GrantTerms,
)
from toolcalls.workflows.models.call import (
    DEFAULT_TASK_QUEUE,
    MEMO_PENDING_APPROVAL,
    MEMO_PENDING_QUESTION,
    CallState,
    ToolCallResult,
)
from toolcalls.workflows.models.limits import check_payload
from toolcalls.workflows.models.question import (
    AskUserOutput,
    UserAnswer,
    UserQuestion,
)
from toolcalls.workflows.models.views import Delivery, NoPendingRequest, Outcome, model_or_none
from toolcalls.workflows.reach.client_inline import InlineRef, InlineRoutes, inline_ref
from toolcalls.workflows.reach.converter import with_pydantic_converter
from toolcalls.workflows.reach.delivery import (
    CALL_ENDED,
    NO_ANSWER,
    applied_by_update,
    queue_signal,
    signal_after_timeout,
    update_reason,
)
from toolcalls.workflows.reach.keyless import KeysCheck
from toolcalls.workflows.reach.serving import ServingProbe

PROBE_TIMEOUT = timedelta(seconds=5)
"""How long a worker gets to take a decision's update (or to answer the ``status`` query) before
the call counts as unserved and the decision goes as the signal.

The server keeps listing a stopped worker's pollers as fresh for up to a minute (a live idle
worker's last poll is up to a minute old too), so fresh pollers alone do not prove a worker serves
the call; an update or query sent to a call nobody serves waits forever.
"""
UPDATE_TIMEOUT = timedelta(seconds=10)
"""How long a taken update may take to be applied (an edit is planned again) before the client
stops waiting for its record."""
STILL_APPLYING = "the call took the update and was still applying it when the client stopped"

Handle = WorkflowHandle[ToolCallWorkflow, ToolCallResult]
_M = TypeVar("_M", bound=BaseModel)


class Inline(Exception):
    """The id names an inline call (``ref``), not a workflow: reach it through its parent."""

    def __init__(self, ref: InlineRef) -> None:
        super().__init__(ref.workflow_id)
        self.ref = ref


class ClientBase:
    """A Temporal client with the pydantic converter, and a call's decisions and answers."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        probe_timeout: timedelta = PROBE_TIMEOUT,
        update_timeout: timedelta = UPDATE_TIMEOUT,
    ) -> None:
        self.client = with_pydantic_converter(client)
        self.task_queue = task_queue
        self.probe_timeout = probe_timeout
        self.update_timeout = update_timeout
        self.inline = InlineRoutes(self)
        """Inline calls: ids that name a call a parent workflow runs itself."""
        self.keys_check = KeysCheck()
        """Whether this client, when it has no keys, may start calls (``keyless``)."""
        self._serving = ServingProbe()

    def handle(self, workflow_id: str) -> Handle:
        return self.client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)

    async def worker_serving(self, task_queue: str) -> bool:
        """Whether a worker polled ``task_queue`` for workflow tasks in the last minute
        (``toolcalls.workflows.reach.serving``).

        ``False`` too when the server does not answer within ``probe_timeout`` (a server busy
        with thousands of calls can take longer): callers then take the way that needs no worker
        (a decision goes as a signal), instead of failing.
        """
        return await self._serving.serving(self.client, task_queue, self.probe_timeout)

    async def _live_state(
        self, handle: Handle, description: WorkflowExecutionDescription
    ) -> CallState | None:
        """The call's state from the worker serving it, or ``None`` when none answers in time."""
        if not await self.worker_serving(description.task_queue):
            return None
        try:
            return await handle.query(ToolCallWorkflow.status, rpc_timeout=self.probe_timeout)
        except RPCError as exc:
            if exc.status in NO_ANSWER:
                return None
            raise

    async def described(self, workflow_id: str) -> tuple[Handle, WorkflowExecutionDescription]:
        """The call's handle and description. Raises ``Inline`` (``.ref``) for an id that names
        an inline call, and ``RPCError`` (not found) for an id that names nothing."""
        handle = self.handle(workflow_id)
        try:
            return handle, await handle.describe()
        except RPCError as exc:
            raise Inline(inline_ref(self.client, workflow_id, exc)) from None

    async def decide(self, workflow_id: str, decision: ApprovalDecision) -> Outcome:
        """Send a decision: the update when a worker serves the call, else the signal."""
        return await self._decide(workflow_id, decision, None)

    async def _decide(
        self,
        workflow_id: str,
        decision: ApprovalDecision,
        described: tuple[Handle, WorkflowExecutionDescription] | None,
    ) -> Outcome:
        """``decide``, with the call's description when the caller has just read it."""
        await check_payload(self.client.data_converter, "the decision", decision)
        try:
            handle, description = described or await self.described(workflow_id)
        except Inline as inline:
            return await self.inline.decide(inline.ref, decision)
        if description.status is not WorkflowExecutionStatus.RUNNING:
            raise NoPendingRequest(f"{workflow_id}: {CALL_ENDED}")
        signal = ToolCallWorkflow.approve if decision.approved else ToolCallWorkflow.deny
        queued = DecisionInput(**decision.model_dump(exclude={"approved"}))
        return await self._deliver(
            handle, description, ToolCallWorkflow.decide, decision, signal, queued
        )

    async def _deliver(
        self,
        handle: Handle,
        description: WorkflowExecutionDescription,
        update: Any,
        argument: ApprovalDecision | UserAnswer,
        signal: Any,
        queued: BaseModel,
    ) -> Outcome:
        """``update`` when a worker takes it within ``probe_timeout``, else ``signal``, queued
        until a worker applies it.

        The update is its own probe: its id carries a deadline (``deliver_by_id``, from
        ``_deliver_by``), so one that no worker took in time is refused by the workflow when a
        worker does (``LATE_UPDATE``, nothing in history) and only the signal is applied. A
        worker that took it answers once the call has applied it (``update_timeout``). An update
        refused as late (this client's clock behind the server's, say) goes as the signal too. An
        update that timed out may have been taken all the same, just in time: when the signal
        after it finds the call ended, the result says whether it was applied (``_applied``).
        """
        if not await self.worker_serving(description.task_queue):
            return await queue_signal(handle, signal, queued)
        try:
            taken = await handle.start_update(
                update,
                argument,
                id=deliver_by_id(self._deliver_by()),
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                rpc_timeout=self.probe_timeout,
            )
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            outcome = await signal_after_timeout(handle, exc, signal, queued)
            if outcome.delivery is Delivery.REJECTED:
                applied = await self._applied(handle, argument)
                if applied is not None:
                    return Outcome(Delivery.ACCEPTED, record=applied)
            return outcome
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return Outcome(Delivery.REJECTED, reason=CALL_ENDED)
            raise
        try:
            record = await taken.result(rpc_timeout=self.update_timeout)
        except WorkflowUpdateFailedError as exc:
            if isinstance(exc.cause, ApplicationError) and exc.cause.type == LATE_UPDATE:
                return await queue_signal(handle, signal, queued)
            return Outcome(Delivery.REJECTED, reason=update_reason(exc))
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            if isinstance(exc.__cause__, asyncio.CancelledError):
                raise asyncio.CancelledError from None
            # Taken: the update is in the call's history and is applied; its record was late.
            return Outcome(Delivery.ACCEPTED, reason=STILL_APPLYING)
        return Outcome(Delivery.ACCEPTED, record=record)

    def _deliver_by(self) -> datetime:
        """Until when a decision's update may be taken: ``probe_timeout`` from now."""
        return datetime.now(UTC) + self.probe_timeout

    async def _applied(
        self, handle: Handle, sent: BaseModel
    ) -> ApprovalRecord | AskUserOutput | None:
        """What the ended call applied of ``sent`` (a decision or an answer) by update, as its
        result records it; ``None`` when it did not, or its result cannot be read."""
        try:
            result = await handle.result(rpc_timeout=self.update_timeout)
        except (WorkflowFailureError, RPCError):
            return None
        return applied_by_update(result, sent)

    async def approve(
        self,
        workflow_id: str,
        *,
        approver: str = "",
        reason: str | None = None,
        arguments: dict[str, Any] | None = None,
        remember: GrantTerms | None = None,
    ) -> Outcome:
        """Approve the call's pending request, found in its memo; with ``arguments``, approve
        the call with those arguments instead (it is planned and previewed again); with
        ``remember``, also grant the approval to later calls."""
        pending, described = await self._approval(workflow_id)
        decision = ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=True,
            approver=approver,
            reason=reason,
            arguments=arguments,
            remember=remember,
        )
        return await self._decide(workflow_id, decision, described)

    async def deny(
        self, workflow_id: str, *, approver: str = "", reason: str | None = None
    ) -> Outcome:
        """Deny the call's pending request, found in its memo."""
        pending, described = await self._approval(workflow_id)
        decision = ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=False,
            approver=approver,
            reason=reason,
        )
        return await self._decide(workflow_id, decision, described)

    async def respond(
        self, workflow_id: str, text: str, *, responder: str = "", reason: str | None = None
    ) -> Outcome:
        """Answer the call's pending request in place of the tool: the call ends ``denied``
        (``responded``), the tool never runs, and the model reads ``text`` as its output.

        Raises:
            pydantic.ValidationError: ``text`` is blank or too long.
        """
        pending, described = await self._approval(workflow_id)
        decision = ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=False,
            approver=responder,
            reason=reason,
            response=text,
        )
        return await self._decide(workflow_id, decision, described)

    async def propose_edit(
        self,
        workflow_id: str,
        arguments: dict[str, Any],
        *,
        editor: str = "",
        request_id: str | None = None,
    ) -> ApprovalRequest:
        """Propose other arguments for the pending request without approving them; the new
        request (with its own preview) is returned, or ``NoPendingRequest`` with the reason the
        workflow gave. Needs a worker serving the call (it plans and previews the edit). With
        ``request_id``, only while that request is the pending one."""
        pending = await self.pending_approval(workflow_id, request_id=request_id)
        proposal = EditProposal(
            request_id=pending.request_id,
            digest=pending.digest,
            editor=editor,
            arguments=arguments,
        )
        await check_payload(self.client.data_converter, "the edit", proposal)
        try:
            await self.described(workflow_id)
        except Inline as inline:
            return await self.inline.edit(inline.ref, proposal)
        try:
            return await self.handle(workflow_id).execute_update(
                ToolCallWorkflow.edit, proposal, rpc_timeout=self.update_timeout
            )
        except WorkflowUpdateFailedError as exc:
            raise NoPendingRequest(f"{workflow_id}: edit refused: {update_reason(exc)}") from None

    async def pending_approval(
        self, workflow_id: str, *, request_id: str | None = None
    ) -> ApprovalRequest:
        """The call's pending approval request (``request_id``, when given), or
        ``NoPendingRequest``."""
        return (await self._approval(workflow_id, request_id))[0]

    async def _approval(
        self, workflow_id: str, request_id: str | None = None
    ) -> tuple[ApprovalRequest, tuple[Handle, WorkflowExecutionDescription] | None]:
        """``pending_approval`` and the call's handle and description it was read from (``None``
        for an inline call)."""
        described: tuple[Handle, WorkflowExecutionDescription] | None = None
        try:
            described = await self.described(workflow_id)
            pending = await _memo(described[1], MEMO_PENDING_APPROVAL, ApprovalRequest)
        except Inline as inline:
            pending = await self.inline.pending_approval(inline.ref)
        found = _still_pending(workflow_id, pending, "approval", "request", request_id)
        return found, described

    async def pending_question(
        self, workflow_id: str, *, request_id: str | None = None
    ) -> UserQuestion:
        """The call's pending question (``request_id``, when given), or ``NoPendingRequest``."""
        try:
            _, description = await self.described(workflow_id)
            pending = await _memo(description, MEMO_PENDING_QUESTION, UserQuestion)
        except Inline as inline:
            pending = await self.inline.pending_question(inline.ref)
        return _still_pending(workflow_id, pending, "question", "question", request_id)

    async def answer(
        self,
        workflow_id: str,
        text: str | None,
        *,
        responder: str = "",
        request_id: str | None = None,
    ) -> Outcome:
        """Answer (``None`` declines) the call's pending question (``request_id``, when given:
        only while that question is pending)."""
        question = await self.pending_question(workflow_id, request_id=request_id)
        answer = UserAnswer(request_id=question.request_id, answer=text, responder=responder)
        await check_payload(self.client.data_converter, "the answer", answer)
        try:
            handle, description = await self.described(workflow_id)
        except Inline as inline:
            return await self.inline.answer(inline.ref, answer)
        signal = ToolCallWorkflow.answer_signal
        return await self._deliver(
            handle, description, ToolCallWorkflow.answer, answer, signal, answer
        )


async def _memo(description: WorkflowExecutionDescription, key: str, model: type[_M]) -> _M | None:
    """The running call's memo entry ``key`` as ``model``; ``None`` once the call has ended."""
    if description.status is not WorkflowExecutionStatus.RUNNING:
        return None
    return model_or_none(model, (await description.memo()).get(key))


_Pending = TypeVar("_Pending", ApprovalRequest, UserQuestion)


def _still_pending(
    workflow_id: str, pending: _Pending | None, what: str, called: str, request_id: str | None
) -> _Pending:
    """``pending``, if there is one and it is ``request_id``'s (when given); else
    ``NoPendingRequest`` naming what is not pending."""
    if pending is None:
        raise NoPendingRequest(f"{workflow_id}: no {what} is pending")
    if request_id is not None and pending.request_id != request_id:
        raise NoPendingRequest(f"{workflow_id}: {called} {request_id} is no longer pending")
    return pending
