"""``InlineCall``: one tool call run inside the parent workflow, without a child workflow.

It is ``ToolCallWorkflow``'s own life (plan, decide, approval wait, execute, result) as an object
of the parent workflow, with what only a workflow of its own could do replaced:

- the plan is a regular activity on the deployment's task queue (the parent's worker has no
  ``plan`` activity), asked to attest the call for this workflow run; the tool's activities run
  there too, never as local activities, and carry the attestation;
- what it waits for goes into the parent's memo and ``ToolCallsWaiting`` search attribute
  (``InlineHost``), not into search attributes of a call; an allowed call writes nothing;
- decisions reach it through the parent's ``toolcalls.inline.*`` handlers;
- no standing grants: a grant approves later calls the deployment's ceiling holds for approval,
  and only a ``ToolCallWorkflow`` may make one.

A call the inline path cannot carry is handed back to the parent, which runs it as a child
``ToolCallWorkflow``: one the deployment's ceiling holds for approval (the deployment's own
approvals are enforced by the deployment's own workflow), one whose approval wait would notify the
deployment's webhooks (only ``ToolCallWorkflow`` may), or one that needs a tool activity when the
plan came without an attestation (a deployment worker from before attestations). See
docs/design.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    CancelledError,
    TimeoutError as ActivityTimeoutError,
)

from toolcalls.workflows.call.parts import _Ended
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import DecisionInput
from toolcalls.workflows.models.attest import ATTEST_PATCH
from toolcalls.workflows.models.call import (
    PLAN_ACTIVITY,
    CallPlan,
    CallStatus,
    Effect,
    ErrorCode,
    ExecuteInput,
    Phase,
    PlanInput,
    PlanOutcome,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
)
from toolcalls.workflows.models.inline import InlinePending, inline_workflow_id
from toolcalls.workflows.rules import policy

PLAN_START_TIMEOUT = timedelta(seconds=30)
"""How long an inline plan may wait for a deployment worker: then the tool is unavailable."""
PLAN_TIMEOUT = timedelta(seconds=10)
NO_GRANTS = (
    "an inline call's approval cannot be remembered: standing grants come only from calls run as "
    "child workflows"
)

NOTIFIES = (
    "waits for an approval the deployment's webhooks are told of, and only a ToolCallWorkflow "
    "may post to them"
)

Charge = Callable[[list[str]], Awaitable[str | None]]
"""Charges a planned call's capabilities to the budget; why it is over budget, or ``None``."""


class Publisher(Protocol):
    """Where an inline call says that what it waits for changed (``InlineHost``)."""

    def changed(self) -> None: ...


class NeedsChild(Exception):
    """The call must run as a child ``ToolCallWorkflow``; the message says why."""


class InlineCall(ToolCallWorkflow):
    """``ToolCallWorkflow``'s life for one call, as an object of the parent workflow."""

    def __init__(
        self,
        request: ToolCallRequest,
        *,
        task_queue: str,
        publisher: Publisher,
        charge: Charge | None = None,
    ) -> None:
        """Args:
        task_queue: the deployment's task queue: the plan's, and the tools' unless they have
            their own.
        publisher: told whenever the call starts or stops waiting for a human.
        charge: when set, the budget is charged once the call is planned (and before the tool
            runs); otherwise it was charged already and the plan may run a pure tool at once.
        """
        super().__init__(request)
        self._workflow_id = inline_workflow_id(workflow.info().workflow_id, self._call_id)
        self._queue = task_queue
        self._notify_queue = task_queue
        self._publisher = publisher
        self._charge = charge

    @property
    def call_id(self) -> str:
        return self._call_id

    async def life(self) -> ToolCallResult:
        """The call's result. Raises ``NeedsChild`` when it must run as a child instead, and
        re-raises the parent's cancellation once the call has ended ``canceled``."""
        try:
            return await self._life()
        except _Ended as ended:
            return ended.result
        except (asyncio.CancelledError, CancelledError):
            self._end(CallStatus.CANCELED, ErrorCode.CANCELED, "the call was canceled")
            raise

    def pending(self) -> InlinePending | None:
        """What the call waits for, as the parent's memo lists it; ``None``: nothing."""
        waiting = self._pending_approval or self._pending_question
        if waiting is None:
            return None
        return InlinePending(
            call_id=self._call_id,
            workflow_id=self._workflow_id,
            tool=self._plan.tool if self._plan else self._request.tool,
            capabilities=self._plan.capabilities if self._plan else [],
            phase=self._phase,
            approval=self._pending_approval,
            question=self._pending_question,
            started_at=self._started_at,
        )

    # The plan ---------------------------------------------------------------------------------

    async def _plan_call(self, arguments: dict[str, Any], *, run: bool = False) -> PlanOutcome:
        first = self._plan is None
        try:
            outcome: PlanOutcome = await workflow.execute_activity(
                PLAN_ACTIVITY,
                PlanInput(
                    tool=self._request.tool,
                    arguments=arguments,
                    task_queue=self._request.task_queue,
                    profile=self._request.profile,
                    policy=self._request.policy,
                    call_id=self._call_id,
                    run=run and self._charge is None,
                    inline=True,
                    principal=self._request.principal,
                    # The workflow that runs the call inline is its parent.
                    parent=workflow.info().workflow_id,
                ),
                result_type=PlanOutcome,
                task_queue=self._queue,
                schedule_to_start_timeout=PLAN_START_TIMEOUT,
                start_to_close_timeout=PLAN_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as err:
            raise self._plan_failed(err) from None
        plan = outcome.plan
        if plan is None:
            return outcome
        plan = _in_parent(plan, self._queue)
        unfit = _unfit(plan, outcome, self._request)
        notifies = unfit is None and first and _notifies(plan, outcome, self._request)
        # Only then, so that parents recorded before attestations replay.
        if notifies and workflow.patched(ATTEST_PATCH):
            unfit = NOTIFIES
        if first:
            if self._charge is not None:
                over = await self._charge(plan.capabilities)
                if over is not None:
                    raise _Ended(self._end(CallStatus.DENIED, ErrorCode.BUDGET_EXCEEDED, over))
            if unfit is not None:
                raise NeedsChild(unfit)
        elif unfit is not None:
            message = f"{plan.tool}: the edited call {unfit}; it cannot run inline"
            return PlanOutcome(error=ToolError(code=ErrorCode.POLICY_DENIED, message=message))
        if outcome.attestation is not None:
            self._attestations[plan.digest] = outcome.attestation
        return outcome.model_copy(update={"plan": plan})

    def _plan_failed(self, err: ActivityError) -> BaseException:
        cause = err.cause
        if isinstance(cause, CancelledError):
            return asyncio.CancelledError()
        if isinstance(cause, ActivityTimeoutError):
            error = ToolError(
                code=ErrorCode.TOOL_UNAVAILABLE,
                message=f"{self._request.tool}: no worker of the deployment took the plan from "
                f"queue {self._queue!r} in time; nothing ran",
                retryable=True,
            )
            return _Ended(self._end_with(CallStatus.FAILED, error))
        return _Ended(self._end(CallStatus.FAILED, ErrorCode.INTERNAL, f"planning failed: {cause}"))

    async def _tool_input(self, plan: CallPlan) -> ExecuteInput:
        # The plan attested the call (``_unfit``): the deployment's worker, which alone could
        # attest again, is not this workflow's.
        return self._execute_input(plan)

    async def _attest_approval(self, plan: CallPlan) -> None:
        """An inline call's approvals are the caller's own (the deployment's ceiling holds none
        of its calls for approval, ``_unfit``): its inline attestation is all the tool needs."""

    def _decision_problem(self, decision: DecisionInput, approved: bool) -> str | None:
        if decision.remember is not None and self._pending_approval is not None:
            return NO_GRANTS
        return super()._decision_problem(decision, approved)

    # Publishing: the parent's memo and search attribute, never the call's own -----------------

    def _set_phase(self, phase: Phase, memo: dict[str, object] | None = None) -> None:
        self._phase = phase
        self._publisher.changed()

    def _publish(self, status: str) -> None:
        """A call's status is not the parent's: nothing goes to its search attributes."""

    def _clear_pending(self) -> None:
        if self._pending_approval is None and self._pending_question is None:
            return
        self._pending_approval = self._pending_question = None
        self._publisher.changed()

    def _republish(self) -> None:
        assert self._approvals is not None
        self._pending_approval = self._approvals.published()
        self._publisher.changed()

    def _end_with(
        self, status: CallStatus, error: ToolError | None, *, output: object = None
    ) -> ToolCallResult:
        # The parent's current details are its own: a call's end must not replace them.
        details = workflow.get_current_details()
        result = super()._end_with(status, error, output=output)
        workflow.set_current_details(details)
        return result


def _in_parent(plan: CallPlan, queue: str) -> CallPlan:
    """The plan as the parent runs it: every activity on a deployment queue, no grants."""
    updates: dict[str, Any] = {}
    opts = plan.activity
    if opts is not None and (opts.local or opts.task_queue is None):
        updates["activity"] = opts.model_copy(
            update={"local": False, "task_queue": opts.task_queue or queue}
        )
    rule = plan.approval_rule
    if rule is not None and rule.max_grant is not None:
        updates["approval_rule"] = rule.model_copy(update={"max_grant": None})
    return plan.model_copy(update=updates) if updates else plan


def _notifies(plan: CallPlan, outcome: PlanOutcome, request: ToolCallRequest) -> bool:
    """Whether the call would wait for an approval (the request's policy asks for one) and tell
    the deployment's webhooks: only ``ToolCallWorkflow``'s notifications are attested."""
    if outcome.ran or plan.activity is None or not plan.webhooks:
        return False
    verdict = policy.decide_plan(plan, request.policy)
    return verdict.effect is Effect.REQUIRE_APPROVAL


def _unfit(plan: CallPlan, outcome: PlanOutcome, request: ToolCallRequest) -> str | None:
    """Why the call cannot run inline, or ``None``."""
    if request.notify is not None:
        return "names a notify webhook, which only a ToolCallWorkflow tells"
    if outcome.ran or plan.activity is None:
        return None  # the plan ran it, or the parent itself asks (``ask_user``)
    if policy.decide_plan(plan, request.policy).effect is (Effect.DENY):
        return None  # denied here, as a child would deny it
    if plan.quotas:
        return "is charged to a quota, which only a ToolCallWorkflow reserves"
    if policy.decide_plan(plan, None).effect is not Effect.ALLOW:
        return "needs the deployment's approval"
    if outcome.attestation is None:
        return "needs a tool activity and the deployment's plan did not attest it"
    return None
