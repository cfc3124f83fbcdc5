"""``ToolCalls``: run tool calls from your own workflow, as child ``ToolCallWorkflow``s.

    tools = ToolCalls(policy=..., approval_timeout=timedelta(hours=1),
                      budget=CallBudget(max_calls=20, per_capability={"network.write": 2}))
    result = await tools.call("calculator", {"expression": "2 ** 10"}, call_id="call_1")
    results = await tools.call_many(requests)      # the model asked for several at once

Each call is a child workflow with the stable id ``"{parent_workflow_id}/tools/{call_id}"``, so a
retried or replayed parent never starts a call twice, and its result is a ``ToolCallResult``:
tool failures, denials and timeouts are results, never exceptions. A call id made again through
the same ``ToolCalls`` joins the first call (same tool and arguments) instead of starting another.
A request too large for Temporal ends ``failed`` / ``invalid_arguments`` before anything starts.
A parent that closes cancels its pending calls. The budget is shared by every call made through
one ``ToolCalls`` and charged in the order the calls were made; a call over it ends ``denied`` /
``budget_exceeded`` without starting a child. Per-capability limits need the call's capabilities
first, so such calls are planned by the deployment (the ``plan`` activity on its task queue)
before the child starts; a call the plan refuses (unknown tool, invalid arguments) ends there too,
without a child.

The parent's worker encodes each child's request and decodes its result, so its client needs the
deployment's data converter: ``pydantic_data_converter``, or, for a deployment that encrypts or
stores payloads, ``worker.data_converter("toolcalls.toml")`` (docs/payloads.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TerminatedError,
    TimeoutError as TemporalTimeoutError,
    WorkflowAlreadyStartedError,
)

from workflows.limits import (
    CODEC_MARGIN_BYTES,
    PAYLOAD_LIMIT_BYTES,
    encoded_size,
    oversized_request,
)
from workflows.models import (
    DEFAULT_APPROVAL_TIMEOUT,
    DEFAULT_TASK_QUEUE,
    DEFINITIONS_ACTIVITY,
    PLAN_ACTIVITY,
    CallEvent,
    CallStatus,
    CapabilityPolicy,
    Definitions,
    DefinitionsRequest,
    ErrorCode,
    EventKind,
    PlanInput,
    PlanOutcome,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
)
from workflows.tool_call import ToolCallWorkflow

PLAN_START_TIMEOUT = timedelta(seconds=30)
PLAN_TIMEOUT = timedelta(seconds=10)
REQUEST_LIMIT_BYTES = PAYLOAD_LIMIT_BYTES - CODEC_MARGIN_BYTES
"""A child's request, measured before the worker's codec runs, must leave room for the codec."""
BUDGET_ORDER_PATCH = "toolcalls.parent.budget-in-request-order"
"""Parents recorded before this charged per-capability budgets as the plans came back."""
JOIN_PATCH = "toolcalls.parent.join-repeated-call-id"
"""Parents recorded before this tried to start a repeated call id again (and were refused)."""


class CallBudget(BaseModel):
    """Limits shared by a parent's calls."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_calls: int | None = Field(default=None, ge=0)
    deadline: datetime | None = None
    """No call starts after this, and every call's own deadline is at most this."""
    per_capability: dict[str, int] = Field(default_factory=dict)
    """Most calls that may need a capability (``network.write``) or family (``email.*``)."""


class BudgetUsage(BaseModel):
    """What a parent's calls have used; pass it on across continue-as-new."""

    calls: int = 0
    per_capability: dict[str, int] = Field(default_factory=dict)


class ToolCalls:
    """Runs tool calls as child workflows of the current workflow, under one shared budget."""

    def __init__(
        self,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        policy: CapabilityPolicy | None = None,
        approval_timeout: timedelta | None = DEFAULT_APPROVAL_TIMEOUT,
        budget: CallBudget | None = None,
        usage: BudgetUsage | None = None,
        profile: str | None = None,
    ) -> None:
        """Args:
        task_queue: the toolcalls deployment's task queue (where ``ToolCallWorkflow`` runs).
        policy: the policy of every call that does not bring its own.
        approval_timeout: the approval timeout of every call that keeps the standard 24 h.
        budget: limits shared by all calls made through this object.
        usage: what earlier runs used (after continue-as-new).
        profile: the deployment profile every call is held to (``[profiles.NAME]``); a request
            naming another one is refused without starting anything.
        """
        self.task_queue = task_queue
        self.policy = policy
        self.approval_timeout = approval_timeout
        self.budget = budget or CallBudget()
        self.usage = usage or BudgetUsage()
        self.profile = profile
        self._last_turn: asyncio.Event | None = None
        self._calls: dict[str, _Call] = {}

    async def call(
        self,
        tool: str | ToolCallRequest,
        arguments: Mapping[str, Any] | None = None,
        *,
        call_id: str | None = None,
    ) -> ToolCallResult:
        """Run one call (a tool name and arguments, or a whole request) and return its result."""
        return await self._call(self._request(tool, arguments, call_id), self._turn())

    async def call_many(
        self, calls: Iterable[ToolCallRequest | tuple[str, Mapping[str, Any]]]
    ) -> list[ToolCallResult]:
        """Run several calls in parallel; results in the order given, budget charged in it too."""
        requests = [
            call if isinstance(call, ToolCallRequest) else self._request(call[0], call[1], None)
            for call in calls
        ]
        # Turns are taken here, in the requests' order, before any call runs.
        turns = [(self._request(request, None, None), self._turn()) for request in requests]
        return list(await asyncio.gather(*(self._call(r, turn) for r, turn in turns)))

    def _turn(self) -> _Turn:
        """The next place in the order in which calls are charged to the budget."""
        turn = _Turn(self._last_turn)
        self._last_turn = turn.done
        return turn

    async def _call(self, request: ToolCallRequest, turn: _Turn) -> ToolCallResult:
        child_id = f"{workflow.info().workflow_id}/tools/{request.call_id}"
        earlier = self._calls.get(child_id)
        if earlier is not None and workflow.patched(JOIN_PATCH):
            turn.done.set()
            return await earlier.joined(request, child_id)
        if earlier is None:
            call = _Call(request)
            self._calls[child_id] = call
            try:
                result = await self._started(request, child_id, turn)
            except BaseException:
                call.result.cancel()  # a repeat waiting for this call is canceled with it
                raise
            call.result.set_result(result)
            return result
        return await self._started(request, child_id, turn)

    async def _started(
        self, request: ToolCallRequest, child_id: str, turn: _Turn
    ) -> ToolCallResult:
        """Check, charge and start the call; its result, or why it ended without a child."""
        try:
            deadline = self._deadline(request)
            if deadline is not None:
                request = request.model_copy(update={"deadline": deadline})
            too_large = _oversized(request)
            if too_large is not None:
                return _local_result(request, child_id, CallStatus.FAILED, error=too_large)
            if self.profile is not None and request.profile != self.profile:
                error = ToolError(
                    code=ErrorCode.POLICY_DENIED,
                    message=f"{request.tool}: this parent's calls are held to profile "
                    f"{self.profile}, not {request.profile or 'none'}",
                )
                return _local_result(request, child_id, CallStatus.DENIED, error=error)
            capabilities: list[str] = []
            if self.budget.per_capability:
                capabilities, refusal = await self._plan(request, child_id)
                if refusal is not None:
                    return refusal
                # Plans come back in any order; the budget is charged in the calls' order.
                if workflow.patched(BUDGET_ORDER_PATCH):
                    await turn.ready()
            over = self._reserve(capabilities)
        finally:
            turn.done.set()
        if over:
            return _local_result(
                request, child_id, CallStatus.DENIED, ErrorCode.BUDGET_EXCEEDED, over
            )
        try:
            return await workflow.execute_child_workflow(
                ToolCallWorkflow.run,
                request,
                id=child_id,
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            )
        except WorkflowAlreadyStartedError:
            return _local_result(
                request,
                child_id,
                CallStatus.FAILED,
                ErrorCode.PRECONDITION_FAILED,
                f"call {request.call_id} was already started as {child_id}; not starting it again",
            )
        except ChildWorkflowError as err:
            return _child_failed(request, child_id, err)

    async def definitions(self, format: str = "anthropic") -> Definitions:
        """The definitions of this helper's profile (or of every enabled tool), from the
        deployment, to give the model; ``digest`` is the profile's snapshot identity."""
        result: Definitions = await workflow.execute_activity(
            DEFINITIONS_ACTIVITY,
            DefinitionsRequest(profile=self.profile, format=format),
            result_type=Definitions,
            task_queue=self.task_queue,
            schedule_to_start_timeout=PLAN_START_TIMEOUT,
            start_to_close_timeout=PLAN_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return result

    def _request(
        self,
        tool: str | ToolCallRequest,
        arguments: Mapping[str, Any] | None,
        call_id: str | None,
    ) -> ToolCallRequest:
        if isinstance(tool, ToolCallRequest):
            request = tool
        else:
            request = ToolCallRequest(tool=tool, arguments=dict(arguments or {}), call_id=call_id)
        updates: dict[str, Any] = {}
        if request.call_id is None:
            updates["call_id"] = str(workflow.uuid4())
        if request.policy is None and self.policy is not None:
            updates["policy"] = self.policy
        if request.profile is None and self.profile is not None:
            updates["profile"] = self.profile
        # "Not set" does not survive serialisation (every field is sent), so the standard default
        # stands for "not set".
        if request.approval_timeout == DEFAULT_APPROVAL_TIMEOUT:
            updates["approval_timeout"] = self.approval_timeout
        return request.model_copy(update=updates) if updates else request

    async def _plan(
        self, request: ToolCallRequest, child_id: str
    ) -> tuple[list[str], ToolCallResult | None]:
        """The call's capabilities, planned by the deployment; or the result that ends it."""
        try:
            outcome = await workflow.execute_activity(
                PLAN_ACTIVITY,
                PlanInput(
                    tool=request.tool,
                    arguments=request.arguments,
                    task_queue=request.task_queue,
                    profile=request.profile,
                    policy=request.policy,
                ),
                result_type=PlanOutcome,
                task_queue=self.task_queue,
                schedule_to_start_timeout=PLAN_START_TIMEOUT,
                start_to_close_timeout=PLAN_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as err:
            code, status = ErrorCode.INTERNAL, CallStatus.FAILED
            if isinstance(err.cause, TemporalTimeoutError):
                code = ErrorCode.TOOL_UNAVAILABLE
            elif isinstance(err.cause, CancelledError):
                code, status = ErrorCode.CANCELED, CallStatus.CANCELED
            message = f"{request.tool}: could not be planned for the budget: {err.cause}"
            return [], _local_result(request, child_id, status, code, message)
        if outcome.plan is None:
            error = outcome.error or ToolError(code=ErrorCode.INTERNAL, message="no plan")
            denied = error.code is ErrorCode.POLICY_DENIED
            status = CallStatus.DENIED if denied else CallStatus.FAILED
            return [], _local_result(request, child_id, status, error=error)
        return outcome.plan.capabilities, None

    def _reserve(self, capabilities: list[str]) -> str | None:
        """Count the call against the budget, or say why it would exceed it."""
        budget, usage = self.budget, self.usage
        if budget.deadline is not None and workflow.now() >= _aware(budget.deadline):
            return f"the budget's deadline {budget.deadline.isoformat()} has passed"
        if budget.max_calls is not None and usage.calls >= budget.max_calls:
            return f"the budget allows {budget.max_calls} calls and all were used"
        keys = [key for key in budget.per_capability if any(_covers(key, c) for c in capabilities)]
        for key in keys:
            if usage.per_capability.get(key, 0) >= budget.per_capability[key]:
                return f"the budget allows {budget.per_capability[key]} calls needing {key}"
        usage.calls += 1
        for key in keys:
            usage.per_capability[key] = usage.per_capability.get(key, 0) + 1
        return None

    def _deadline(self, request: ToolCallRequest) -> datetime | None:
        deadlines = [_aware(d) for d in (request.deadline, self.budget.deadline) if d is not None]
        return min(deadlines, default=None)


class _Turn:
    """A call's place in the budget's order: it is charged once the call before it was."""

    def __init__(self, before: asyncio.Event | None) -> None:
        self.before = before
        self.done = asyncio.Event()
        """Set once this call was charged, or ended without being charged."""

    async def ready(self) -> None:
        if self.before is not None and not self.before.is_set():
            await self.before.wait()


class _Call:
    """A call made through one ``ToolCalls``: a repeat of its call id gets its result."""

    def __init__(self, request: ToolCallRequest) -> None:
        self.request = request
        self.result: asyncio.Future[ToolCallResult] = asyncio.get_running_loop().create_future()

    async def joined(self, request: ToolCallRequest, child_id: str) -> ToolCallResult:
        """The first call's result for the same call; a refusal for another under its id."""
        first = self.request
        if (first.tool, first.arguments) != (request.tool, request.arguments):
            return _local_result(
                request,
                child_id,
                CallStatus.FAILED,
                ErrorCode.PRECONDITION_FAILED,
                f"call {request.call_id} was already made with another tool or other arguments "
                f"as {child_id}; not starting it again",
            )
        return await asyncio.shield(self.result)


def _oversized(request: ToolCallRequest) -> ToolError | None:
    """The error for a request too large to start as a child, measured as the SDK will."""
    converter = workflow.payload_converter()
    size = encoded_size(converter.to_payloads([request]))
    if size <= REQUEST_LIMIT_BYTES:
        return None
    sizes = {
        name: encoded_size(converter.to_payloads([value]))
        for name, value in request.arguments.items()
    }
    return oversized_request(request.tool, size, sizes, REQUEST_LIMIT_BYTES)


def _covers(key: str, capability: str) -> bool:
    return capability == key or (key.endswith(".*") and capability.startswith(key[:-1]))


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _local_result(
    request: ToolCallRequest,
    child_id: str,
    status: CallStatus,
    code: ErrorCode | None = None,
    message: str = "",
    *,
    error: ToolError | None = None,
) -> ToolCallResult:
    """A result for a call that ended in the parent, without (or beyond) its child."""
    now = workflow.now()
    error = error or ToolError(code=code or ErrorCode.INTERNAL, message=message)
    return ToolCallResult(
        workflow_id=child_id,
        call_id=request.call_id or "",
        tool=request.tool,
        status=status,
        error=error,
        events=[CallEvent(at=now, kind=EventKind.FINISHED, message=f"{status}: {error.message}")],
        started_at=now,
        finished_at=now,
    )


def _child_failed(
    request: ToolCallRequest, child_id: str, err: ChildWorkflowError
) -> ToolCallResult:
    """A child that did not return a result: canceled, terminated, timed out or broken."""
    cause = err.cause
    if isinstance(cause, CancelledError):
        return _local_result(
            request, child_id, CallStatus.CANCELED, ErrorCode.CANCELED, "the call was canceled"
        )
    if isinstance(cause, TemporalTimeoutError):
        return _local_result(
            request, child_id, CallStatus.TIMED_OUT, ErrorCode.TIMED_OUT, "the call timed out"
        )
    if isinstance(cause, TerminatedError):
        message = "the call was terminated; its effect is unknown"
        return _local_result(request, child_id, CallStatus.UNCERTAIN, ErrorCode.UNCERTAIN, message)
    detail = cause.message if isinstance(cause, ApplicationError) else str(cause or err)
    return _local_result(
        request, child_id, CallStatus.FAILED, ErrorCode.INTERNAL, f"the call failed: {detail}"
    )
