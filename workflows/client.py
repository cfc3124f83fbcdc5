"""``ToolCallClient``: what applications and UIs use to start calls and decide on them.

Everything a UI needs works with no worker running: ``pending()`` is a visibility query on the
search attributes with each call's ``ApprovalRequest`` or ``UserQuestion`` from its memo, and
``status()`` falls back to describe, memo and history. ``decide`` uses the ``decide`` update when a
worker serves the call (so a rejected decision comes back with the validator's reason) and the
signal when none does (the decision is queued and applied when a worker returns).

A workflow id runs one call, once: ``start`` never reuses an id, and a start for an id that exists
returns that call (joined while it runs, its recorded result once it has ended), so a retrying
client is safe. Requests, decisions and answers are measured with the client's data converter,
codec included, and refused before they are sent when Temporal would refuse them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from workflows.finished import list_finished
from workflows.grant_client import list_grants, revoke_grant
from workflows.grants import Grant, Revocation
from workflows.limits import PayloadTooLarge, check_payload, check_request
from workflows.models import (
    DEFAULT_TASK_QUEUE,
    MEMO_PENDING_APPROVAL,
    MEMO_PENDING_QUESTION,
    SEARCH_CAPABILITIES,
    SEARCH_STATUS,
    SEARCH_TOOL,
    WORKFLOW_NAME,
    ApprovalDecision,
    ApprovalRequest,
    CallState,
    DecisionInput,
    EditProposal,
    GrantTerms,
    Phase,
    ToolCallRequest,
    ToolCallResult,
    UserAnswer,
    UserQuestion,
)
from workflows.tool_call import ToolCallWorkflow
from workflows.views import (
    CallConflict,
    CallView,
    Delivery,
    FinishedCall,
    NoPendingRequest,
    Outcome,
    PendingCall,
    Started,
    finished_state,
    model_or_none,
)

POLLER_FRESHNESS = timedelta(minutes=1)
"""A workflow poller seen this recently may be a worker serving the call's queue."""
PROBE_TIMEOUT = timedelta(seconds=5)
"""How long a worker gets to answer the ``status`` query before the call counts as unserved.

The server keeps listing a stopped worker's pollers as fresh for up to a minute (a live idle
worker's last poll is up to a minute old too), so fresh pollers alone do not prove a worker serves
the call; an update or query sent to a call nobody serves waits forever.
"""
UPDATE_TIMEOUT = timedelta(seconds=10)
"""How long an update may wait for the worker that answered the probe; then the signal goes."""
PLAN_WAIT = timedelta(seconds=30)
"""How long ``planned`` waits for a worker that serves the call to plan it."""
PLAN_POLL_SECONDS = 0.2
_NO_ANSWER = (
    RPCStatusCode.CANCELLED,  # how the SDK reports its own RPC timeout
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.FAILED_PRECONDITION,  # "no poller seen for task queue recently"
)
PENDING_QUERY = (
    f'WorkflowType = "{WORKFLOW_NAME}" AND ExecutionStatus = "Running" AND '
    f'{SEARCH_STATUS.name} IN ("{Phase.AWAITING_APPROVAL.value}", "{Phase.AWAITING_ANSWER.value}")'
)

Handle = WorkflowHandle[ToolCallWorkflow, ToolCallResult]
_M = TypeVar("_M", bound=BaseModel)

__all__ = [
    "CallConflict",
    "CallView",
    "Delivery",
    "FinishedCall",
    "NoPendingRequest",
    "Outcome",
    "PayloadTooLarge",
    "PendingCall",
    "Started",
    "ToolCallClient",
]


def pydantic_converter(existing: DataConverter | None = None) -> DataConverter:
    """``existing`` with the pydantic payload converter every toolcalls payload needs.

    Only the payload converter changes: a codec (encryption, say) and a failure converter the
    application chose must stay, or payloads would go out unencoded.
    """
    if existing is None:
        return pydantic_data_converter
    if existing.payload_converter_class is pydantic_data_converter.payload_converter_class:
        return existing
    return dataclasses.replace(
        existing, payload_converter_class=pydantic_data_converter.payload_converter_class
    )


def with_pydantic_converter(client: Client) -> Client:
    """``client``, or a client on the same connection with ``pydantic_converter``."""
    converter = pydantic_converter(client.data_converter)
    if converter is client.data_converter:
        return client
    config = client.config()
    config["data_converter"] = converter
    return Client(**config)


class ToolCallClient:
    """Start, watch and decide tool calls; every method works with a plain Temporal ``Client``."""

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

    @classmethod
    async def connect(
        cls,
        address: str = "localhost:7233",
        *,
        namespace: str = "default",
        task_queue: str = DEFAULT_TASK_QUEUE,
        **connect: Any,
    ) -> ToolCallClient:
        """Connect with the pydantic data converter every toolcalls payload needs.

        A deployment that encrypts or stores payloads passes its own converter, which keeps its
        codec and store: ``data_converter=worker.payloads.converter.data_converter(config)``.
        """
        connect.setdefault("data_converter", pydantic_data_converter)
        client = await Client.connect(address, namespace=namespace, **connect)
        return cls(client, task_queue=task_queue)

    def handle(self, workflow_id: str) -> Handle:
        return self.client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)

    async def start(self, request: ToolCallRequest, *, workflow_id: str | None = None) -> Handle:
        """Start a call, or return the call its id already names (see ``start_or_join``)."""
        return (await self.start_or_join(request, workflow_id=workflow_id)).handle

    async def start_or_join(
        self, request: ToolCallRequest, *, workflow_id: str | None = None
    ) -> Started:
        """Start a call; for an id that exists, that call, and nothing is started.

        The id defaults to ``toolcall-<call_id or a fresh uuid>``; it is never reused, whatever
        became of its call. Raises ``PayloadTooLarge`` for a request Temporal would refuse, and
        ``CallConflict`` for an id that names another call (another tool or other arguments).
        """
        await check_request(self.client.data_converter, request)
        workflow_id = workflow_id or f"toolcall-{request.call_id or uuid.uuid4()}"
        try:
            handle = await self.client.start_workflow(
                ToolCallWorkflow.run,
                request,
                id=workflow_id,
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(SEARCH_STATUS, Phase.PLANNING.value),
                        SearchAttributePair(SEARCH_TOOL, request.tool[:200]),
                    ]
                ),
            )
        except WorkflowAlreadyStartedError:
            return await self._existing(request, workflow_id)
        return Started(handle, existing=False, running=True)

    async def _existing(self, request: ToolCallRequest, workflow_id: str) -> Started:
        """The call ``workflow_id`` already names, if it is the same call as ``request``."""
        handle = self.handle(workflow_id)
        description = await handle.describe()
        if description.workflow_type != WORKFLOW_NAME:
            raise CallConflict(
                f"{workflow_id} is a {description.workflow_type} workflow, not a tool call"
            )
        async for event in handle.fetch_history_events(page_size=1):
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            (first,) = await self.client.data_converter.decode(payloads, [ToolCallRequest])
            break
        else:  # pragma: no cover - a workflow's history starts with its start event
            raise CallConflict(f"{workflow_id}: the call's history is empty")
        if (first.tool, first.arguments) != (request.tool, request.arguments):
            raise CallConflict(
                f"{workflow_id} is already a call of {first.tool} with other arguments; "
                "a call id runs one call, once"
            )
        running = description.status is WorkflowExecutionStatus.RUNNING
        return Started(handle, existing=True, running=running)

    async def planned(self, workflow_id: str, *, timeout: timedelta = PLAN_WAIT) -> CallView:
        """The call once it is past planning or has ended, so bad arguments show at once.

        A call no worker serves is returned as it is (it is planned when a worker comes); so is
        one still planning after ``timeout``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout.total_seconds()
        while True:
            view = await self.status(workflow_id)
            planning = view.running and view.state.phase is Phase.PLANNING
            if not planning or not view.live or loop.time() >= deadline:
                return view
            await asyncio.sleep(PLAN_POLL_SECONDS)

    async def call(
        self, request: ToolCallRequest, *, workflow_id: str | None = None
    ) -> ToolCallResult:
        """Start a call and wait for its result."""
        return await (await self.start(request, workflow_id=workflow_id)).result()

    async def pending(self, *, limit: int = 100) -> list[PendingCall]:
        """Calls waiting for an approval or an answer, newest first; no worker needed."""
        found = []
        async for execution in self.client.list_workflows(PENDING_QUERY, limit=limit):
            attrs = execution.typed_search_attributes
            phase = Phase(attrs.get(SEARCH_STATUS) or Phase.AWAITING_APPROVAL.value)
            memo = await execution.memo()
            approval = model_or_none(ApprovalRequest, memo.get(MEMO_PENDING_APPROVAL))
            question = model_or_none(UserQuestion, memo.get(MEMO_PENDING_QUESTION))
            if approval is None and question is None:
                continue  # the memo and the attribute are written together; this one just moved on
            found.append(
                PendingCall(
                    workflow_id=execution.id,
                    tool=attrs.get(SEARCH_TOOL) or "",
                    capabilities=list(attrs.get(SEARCH_CAPABILITIES) or []),
                    phase=phase,
                    approval=approval,
                    question=question,
                    started_at=execution.start_time,
                    parent_id=execution.parent_id,
                )
            )
        return found

    async def finished(self, *, limit: int = 50) -> list[FinishedCall]:
        """Calls that have ended, the most recently closed first (visibility: no worker needed)."""
        return await list_finished(self.client, limit=limit)

    async def result_of(self, call: FinishedCall) -> ToolCallResult:
        """The recorded result of a call that has ended (read from its history)."""
        handle = self.client.get_workflow_handle_for(
            ToolCallWorkflow.run, call.workflow_id, run_id=call.run_id
        )
        return await handle.result()

    async def worker_serving(self, task_queue: str) -> bool:
        """Whether a worker polled ``task_queue`` for workflow tasks in the last minute."""
        response = await self.client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        now = datetime.now(UTC)
        return any(
            now - poller.last_access_time.ToDatetime(UTC) < POLLER_FRESHNESS
            for poller in response.pollers
        )

    async def status(self, workflow_id: str) -> CallView:
        """The call's state: from the worker when one serves it, else from describe and history."""
        handle = self.handle(workflow_id)
        description = await handle.describe()
        running = description.status is WorkflowExecutionStatus.RUNNING
        if not running and description.status is WorkflowExecutionStatus.COMPLETED:
            result = await handle.result()
            return CallView(
                finished_state(result),
                live=False,
                running=False,
                history_events=[],
                parent_id=description.parent_id,
            )
        state = await self._live_state(handle, description) if running else None
        if state is not None:
            return CallView(
                state, live=True, running=True, history_events=[], parent_id=description.parent_id
            )
        return await self._from_history(handle, description, running)

    async def _live_state(
        self, handle: Handle, description: WorkflowExecutionDescription
    ) -> CallState | None:
        """The call's state from the worker serving it, or ``None`` when none answers in time."""
        if not await self.worker_serving(description.task_queue):
            return None
        try:
            return await handle.query(ToolCallWorkflow.status, rpc_timeout=self.probe_timeout)
        except RPCError as exc:
            if exc.status in _NO_ANSWER:
                return None
            raise

    async def _from_history(
        self, handle: Handle, description: WorkflowExecutionDescription, running: bool
    ) -> CallView:
        memo = await description.memo() if running else {}
        attrs = description.typed_search_attributes
        status = attrs.get(SEARCH_STATUS) or Phase.PLANNING.value
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        (request,) = await self.client.data_converter.decode(
            started.input.payloads, [ToolCallRequest]
        )
        # A call that ended without saying so (terminated, timed out) waits for nothing, whatever
        # its last search attribute and memo say.
        known = running and status in Phase.__members__.values()
        state = CallState(
            workflow_id=description.id,
            call_id=request.call_id or description.id,
            tool=attrs.get(SEARCH_TOOL) or request.tool,
            phase=Phase(status) if known else Phase.DONE,
            capabilities=list(attrs.get(SEARCH_CAPABILITIES) or []),
            pending_approval=model_or_none(ApprovalRequest, memo.get(MEMO_PENDING_APPROVAL)),
            pending_question=model_or_none(UserQuestion, memo.get(MEMO_PENDING_QUESTION)),
            events=[],
            result=None,
        )
        names = [EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events]
        return CallView(
            state,
            live=False,
            running=running,
            history_events=names,
            parent_id=description.parent_id,
        )

    async def decide(self, workflow_id: str, decision: ApprovalDecision) -> Outcome:
        """Send a decision: the update when a worker serves the call, else the signal."""
        await check_payload(self.client.data_converter, "the decision", decision)
        handle = self.handle(workflow_id)
        description = await handle.describe()
        if description.status is not WorkflowExecutionStatus.RUNNING:
            raise NoPendingRequest(f"{workflow_id}: the call has ended")
        if await self._live_state(handle, description) is None:
            signal = ToolCallWorkflow.approve if decision.approved else ToolCallWorkflow.deny
            await handle.signal(signal, DecisionInput(**decision.model_dump(exclude={"approved"})))
            return Outcome(Delivery.QUEUED)
        signal = ToolCallWorkflow.approve if decision.approved else ToolCallWorkflow.deny
        try:
            record = await handle.execute_update(
                ToolCallWorkflow.decide, decision, rpc_timeout=self.update_timeout
            )
        except WorkflowUpdateFailedError as exc:
            return Outcome(Delivery.REJECTED, reason=_reason(exc))
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            await _signal_after_timeout(
                handle, exc, signal, DecisionInput(**decision.model_dump(exclude={"approved"}))
            )
            return Outcome(Delivery.QUEUED)
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return Outcome(Delivery.REJECTED, reason="the call has ended")
            raise
        return Outcome(Delivery.ACCEPTED, record=record)

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
        pending = await self.pending_approval(workflow_id)
        decision = ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=True,
            approver=approver,
            reason=reason,
            arguments=arguments,
            remember=remember,
        )
        return await self.decide(workflow_id, decision)

    async def deny(
        self, workflow_id: str, *, approver: str = "", reason: str | None = None
    ) -> Outcome:
        """Deny the call's pending request, found in its memo."""
        pending = await self.pending_approval(workflow_id)
        decision = ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=False,
            approver=approver,
            reason=reason,
        )
        return await self.decide(workflow_id, decision)

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
            return await self.handle(workflow_id).execute_update(
                ToolCallWorkflow.edit, proposal, rpc_timeout=self.update_timeout
            )
        except WorkflowUpdateFailedError as exc:
            raise NoPendingRequest(f"{workflow_id}: edit refused: {_reason(exc)}") from None

    async def grants(self, *, tool: str | None = None) -> list[Grant]:
        """The standing grants in force (from visibility: no worker needed)."""
        return await list_grants(self.client, tool=tool)

    async def revoke_grant(self, grant_id: str, *, by: str = "", reason: str | None = None) -> None:
        """End a standing grant now; later calls it would have approved ask a human again."""
        await revoke_grant(self.client, grant_id, Revocation(by=by, reason=reason))

    async def pending_approval(
        self, workflow_id: str, *, request_id: str | None = None
    ) -> ApprovalRequest:
        """The call's pending approval request (``request_id``, when given), or
        ``NoPendingRequest``."""
        pending = await self._memo(workflow_id, MEMO_PENDING_APPROVAL, ApprovalRequest)
        if pending is None:
            raise NoPendingRequest(f"{workflow_id}: no approval is pending")
        if request_id is not None and pending.request_id != request_id:
            raise NoPendingRequest(f"{workflow_id}: request {request_id} is no longer pending")
        return pending

    async def pending_question(
        self, workflow_id: str, *, request_id: str | None = None
    ) -> UserQuestion:
        """The call's pending question (``request_id``, when given), or ``NoPendingRequest``."""
        pending = await self._memo(workflow_id, MEMO_PENDING_QUESTION, UserQuestion)
        if pending is None:
            raise NoPendingRequest(f"{workflow_id}: no question is pending")
        if request_id is not None and pending.request_id != request_id:
            raise NoPendingRequest(f"{workflow_id}: question {request_id} is no longer pending")
        return pending

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
        handle = self.handle(workflow_id)
        description = await handle.describe()
        if await self._live_state(handle, description) is None:
            await handle.signal(ToolCallWorkflow.answer_signal, answer)
            return Outcome(Delivery.QUEUED)
        try:
            output = await handle.execute_update(
                ToolCallWorkflow.answer, answer, rpc_timeout=self.update_timeout
            )
        except WorkflowUpdateFailedError as exc:
            return Outcome(Delivery.REJECTED, reason=_reason(exc))
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            await _signal_after_timeout(handle, exc, ToolCallWorkflow.answer_signal, answer)
            return Outcome(Delivery.QUEUED)
        return Outcome(Delivery.ACCEPTED, record=output)

    async def _memo(self, workflow_id: str, key: str, model: type[_M]) -> _M | None:
        description = await self.handle(workflow_id).describe()
        if description.status is not WorkflowExecutionStatus.RUNNING:
            return None
        return model_or_none(model, (await description.memo()).get(key))


def _reason(exc: WorkflowUpdateFailedError) -> str:
    cause = exc.cause
    return cause.message if isinstance(cause, ApplicationError) else str(cause or exc)


async def _signal_after_timeout(
    handle: Handle,
    exc: WorkflowUpdateRPCTimeoutOrCancelledError,
    signal: Any,
    payload: object,
) -> None:
    """Send ``signal`` when an update timed out: the worker that answered the probe is gone.

    If the update was delivered after all, the workflow takes the first of the two and records
    the other as ignored. A cancellation of the caller is not a timeout: it propagates.
    """
    if isinstance(exc.__cause__, asyncio.CancelledError):
        raise asyncio.CancelledError
    await handle.signal(signal, payload)
