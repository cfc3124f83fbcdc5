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

With ``inline=True`` (for the helper, or per call) a call runs inside this workflow instead
(``toolcalls.workflows.call.inline``): the same plan, policy, approval wait and result, decided
through this workflow's ``toolcalls.inline.*`` handlers, with no child; a call the inline path
cannot carry (the deployment's ceiling holds it for approval, say) still runs as a child. The id
``"{parent_workflow_id}/tools/{call_id}"`` names it either way.

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
    CancelledError,
    ChildWorkflowError,
    TimeoutError as TemporalTimeoutError,
    WorkflowAlreadyStartedError,
)

from toolcalls.workflows.call.inline import InlineCall, NeedsChild
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    DEFAULT_APPROVAL_TIMEOUT,
    DEFAULT_TASK_QUEUE,
    DEFINITIONS_ACTIVITY,
    PLAN_ACTIVITY,
    CallStatus,
    CapabilityPolicy,
    ErrorCode,
    PlanInput,
    PlanOutcome,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
)
from toolcalls.workflows.models.definitions import (
    Definitions,
    DefinitionsRequest,
)
from toolcalls.workflows.models.inline import inline_workflow_id
from toolcalls.workflows.models.limits import (
    CODEC_MARGIN_BYTES,
    PAYLOAD_LIMIT_BYTES,
    encoded_size,
    oversized_request,
)
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.reach.inline_host import InlineHost
from toolcalls.workflows.reach.parent_parts import (
    MadeCall,
    Turn,
    already_started,
    child_failed,
    local_result,
)

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
    """Runs tool calls as child workflows of the current workflow (or inside it), under one
    shared budget."""

    def __init__(
        self,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        policy: CapabilityPolicy | None = None,
        approval_timeout: timedelta | None = DEFAULT_APPROVAL_TIMEOUT,
        budget: CallBudget | None = None,
        usage: BudgetUsage | None = None,
        profile: str | None = None,
        inline: bool = False,
        principal: Principal | None = None,
    ) -> None:
        """Set what every call made through this object shares.

        Args:
            task_queue: the toolcalls deployment's task queue (where ``ToolCallWorkflow`` runs).
            policy: the policy of every call that does not bring its own.
            approval_timeout: the approval timeout of every call that keeps the standard 24 h.
            budget: limits shared by all calls made through this object.
            usage: what earlier runs used (after continue-as-new).
            profile: the deployment profile every call is held to (``[profiles.NAME]``); a
                request naming another one is refused without starting anything.
            inline: run calls inside this workflow rather than as child workflows (see
                ``toolcalls.workflows.call.inline``); ``call`` and ``call_many`` may choose
                otherwise per call.
            principal: whom every call that names none acts for.
        """
        self.task_queue = task_queue
        self.policy = policy
        self.approval_timeout = approval_timeout
        self.budget = budget or CallBudget()
        self.usage = usage or BudgetUsage()
        self.profile = profile
        self.inline = inline
        self.principal = principal
        self._last_turn: asyncio.Event | None = None
        self._calls: dict[str, MadeCall] = {}

    async def call(
        self,
        tool: str | ToolCallRequest,
        arguments: Mapping[str, Any] | None = None,
        *,
        call_id: str | None = None,
        inline: bool | None = None,
    ) -> ToolCallResult:
        """Run one call (a tool name and arguments, or a whole request) and return its result;
        ``inline`` overrides the helper's choice for this call."""
        request = self._request(tool, arguments, call_id)
        return await self._call(request, self._turn(), self._inline(inline))

    async def call_many(
        self,
        calls: Iterable[ToolCallRequest | tuple[str, Mapping[str, Any]]],
        *,
        inline: bool | None = None,
    ) -> list[ToolCallResult]:
        """Run several calls in parallel; results in the order given, budget charged in it too."""
        requests = [
            call if isinstance(call, ToolCallRequest) else self._request(call[0], call[1], None)
            for call in calls
        ]
        # Turns are taken here, in the requests' order, before any call runs.
        turns = [(self._request(request, None, None), self._turn()) for request in requests]
        where = self._inline(inline)
        return list(await asyncio.gather(*(self._call(r, turn, where) for r, turn in turns)))

    def _inline(self, inline: bool | None) -> bool:
        return self.inline if inline is None else inline

    def _turn(self) -> Turn:
        """The next place in the order in which calls are charged to the budget."""
        turn = Turn(self._last_turn)
        self._last_turn = turn.done
        return turn

    async def _call(self, request: ToolCallRequest, turn: Turn, inline: bool) -> ToolCallResult:
        child_id = inline_workflow_id(workflow.info().workflow_id, request.call_id or "")
        earlier = self._calls.get(child_id)
        if earlier is not None and workflow.patched(JOIN_PATCH):
            turn.done.set()
            return await earlier.joined(request, child_id)
        if earlier is None:
            call = MadeCall(request)
            self._calls[child_id] = call
            try:
                result = await self._started(request, child_id, turn, inline)
            except BaseException:
                call.result.cancel()  # a repeat waiting for this call is canceled with it
                raise
            call.result.set_result(result)
            return result
        return await self._started(request, child_id, turn, inline)

    async def _started(
        self, request: ToolCallRequest, child_id: str, turn: Turn, inline: bool
    ) -> ToolCallResult:
        """Check, charge and start the call; its result, or why it ended without a child."""
        charged_later = False
        try:
            deadline = self._deadline(request)
            if deadline is not None:
                request = request.model_copy(update={"deadline": deadline})
            too_large = _oversized(request)
            if too_large is not None:
                return local_result(request, child_id, CallStatus.FAILED, error=too_large)
            if self.profile is not None and request.profile != self.profile:
                error = ToolError(
                    code=ErrorCode.POLICY_DENIED,
                    message=f"{request.tool}: this parent's calls are held to profile "
                    f"{self.profile}, not {request.profile or 'none'}",
                )
                return local_result(request, child_id, CallStatus.DENIED, error=error)
            if inline and self.budget.per_capability:
                # The inline call's own plan gives its capabilities: it is charged then.
                charged_later = True
                return await self._run_inline(request, child_id, turn, charge=True)
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
            if not charged_later:
                turn.done.set()
        if over:
            return local_result(
                request, child_id, CallStatus.DENIED, ErrorCode.BUDGET_EXCEEDED, over
            )
        if inline:
            return await self._run_inline(request, child_id, turn, charge=False)
        return await self._child(request, child_id)

    async def _run_inline(
        self, request: ToolCallRequest, child_id: str, turn: Turn, *, charge: bool
    ) -> ToolCallResult:
        """Run the call in this workflow; as a child when the inline path cannot carry it."""

        async def charged(capabilities: list[str]) -> str | None:
            try:
                await turn.ready()
                return self._reserve(capabilities)
            finally:
                turn.done.set()

        host = InlineHost.current()
        if host.has(request.call_id or ""):
            turn.done.set()
            return already_started(request, child_id)
        call = InlineCall(
            request, task_queue=self.task_queue, publisher=host, charge=charged if charge else None
        )
        host.add(call)
        try:
            return await call.life()
        except NeedsChild:
            host.remove(call)
        finally:
            turn.done.set()
        return await self._child(request, child_id)

    async def _child(self, request: ToolCallRequest, child_id: str) -> ToolCallResult:
        """Run the call as a child ``ToolCallWorkflow``."""
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
            return already_started(request, child_id)
        except ChildWorkflowError as err:
            return child_failed(request, child_id, err)

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
        if request.principal is None and self.principal is not None:
            updates["principal"] = self.principal
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
                    principal=request.principal,
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
            return [], local_result(request, child_id, status, code, message)
        if outcome.plan is None:
            error = outcome.error or ToolError(code=ErrorCode.INTERNAL, message="no plan")
            denied = error.code is ErrorCode.POLICY_DENIED
            status = CallStatus.DENIED if denied else CallStatus.FAILED
            return [], local_result(request, child_id, status, error=error)
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
