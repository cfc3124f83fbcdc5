"""What every step of ``ToolCallWorkflow`` shares: its state, planning, running an activity,
the event log, the visibility writes and the one place a result is made.

``ToolCallWorkflow`` (``toolcalls.workflows.call.tool_call``) is this plus the approval wait
(``toolcalls.workflows.call.approval_flow``), the question and the handlers; the split only keeps
each module short, the workflow is one class.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeUpdate
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutError as ActivityTimeoutError,
)

from toolcalls.workflows.call import telemetry
from toolcalls.workflows.call.approvals import Approvals
from toolcalls.workflows.call.failures import failed
from toolcalls.workflows.call.parts import (
    _STATUS_FOR_CODE,
    _deadline,
    _Ended,
    _non_finite,
    _Refused,
    after_canceled_write,
    canceled_write,
)
from toolcalls.workflows.models.approval import ApprovalRecord, ApprovalRequest, ArgumentEdit
from toolcalls.workflows.models.attest import Attestation
from toolcalls.workflows.models.call import (
    MEMO_PENDING_APPROVAL,
    MEMO_PENDING_QUESTION,
    PLAN_ACTIVITY,
    SEARCH_CAPABILITIES,
    SEARCH_STATUS,
    SEARCH_TOOL,
    CallEvent,
    CallPlan,
    CallStatus,
    ErrorCode,
    EventKind,
    ExecuteInput,
    Phase,
    PlanInput,
    PlanOutcome,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
)
from toolcalls.workflows.models.question import (
    UserAnswer,
    UserQuestion,
)

PLAN_TIMEOUT = timedelta(seconds=10)
MAX_EVENTS = 200
"""Beyond this, further ignored signals are only counted, so a flood cannot bloat the result."""
MAX_KEYWORD_CHARS = 200

_Payload = TypeVar("_Payload", bound=BaseModel)


class CallBase:
    """The state of one call and the steps every path shares."""

    def __init__(self, request: ToolCallRequest) -> None:
        info = workflow.info()
        self._request = request
        self._workflow_id = info.workflow_id
        self._call_id = request.call_id or info.workflow_id
        self._started_at = workflow.now()
        self._deadline = _deadline(request, self._started_at)
        self._phase = Phase.PLANNING
        self._plan: CallPlan | None = None
        self._outcome: PlanOutcome | None = None
        """The plan's answer; it holds the tool's outcome when the plan ran the tool."""
        self._tool_known = False
        """The plan found the requested tool in the catalog: its name may label metrics."""
        self._events: list[CallEvent] = []
        self._dropped_events = 0
        self._approvals: Approvals | None = None
        """The current approval wait's state; kept once decided, to answer late decisions."""
        self._pending_approval: ApprovalRequest | None = None
        """The request as published (memo, ``status``) while the call waits for it."""
        self._approval: ApprovalRecord | None = None
        self._approved_by: list[ApprovalRecord] = []
        self._edits: list[ArgumentEdit] = []
        self._precondition: dict[str, object] | None = None
        self._pending_question: UserQuestion | None = None
        self._answer: UserAnswer | None = None
        self._attestations: dict[str, Attestation] = {}
        """The deployment's word on each digest this run may run: its plan's, then its approval's
        (``toolcalls.workflows.call.attested``)."""
        self._waited = timedelta(0)
        self._ran = timedelta(0)
        self._result: ToolCallResult | None = None
        self._search_updates: list[SearchAttributeUpdate[Any]] = [
            SEARCH_TOOL.value_set(request.tool[:MAX_KEYWORD_CHARS])
        ]

    async def _planned(self) -> CallPlan:
        bad = _non_finite(self._request.arguments)
        if bad:
            # JSON has no NaN or Infinity; passed on, they would silently become null.
            error = ToolError(
                code=ErrorCode.INVALID_ARGUMENTS,
                message=f"{self._request.tool}: invalid arguments: {', '.join(bad)}: "
                "numbers must be finite",
                fixable_args=bad,
            )
            raise _Ended(self._end_with(CallStatus.FAILED, error))
        outcome = await self._plan_call(self._request.arguments, run=True)
        self._tool_known = telemetry.tool_found(outcome)
        if outcome.plan is None:
            error = outcome.error or ToolError(code=ErrorCode.INTERNAL, message="plan gave nothing")
            if error.code is ErrorCode.POLICY_DENIED:
                self._event(EventKind.POLICY_DENIED, error.message)
            status = _STATUS_FOR_CODE.get(error.code, CallStatus.FAILED)
            raise _Ended(self._end_with(status, error))
        plan: CallPlan = outcome.plan
        self._plan = plan
        self._outcome = outcome
        # The request's tool name is pending already and is the plan's: the catalog finds a tool
        # by its name (and knows no name over MAX_KEYWORD_CHARS).
        self._search_updates.append(SEARCH_CAPABILITIES.value_set(plan.capabilities))
        caps = ", ".join(plan.capabilities) or "no capabilities"
        self._event(EventKind.PLANNED, f"{plan.tool} ({plan.side_effect.value}; {caps})")
        telemetry.planned(self._call_id, plan)
        return plan

    async def _plan_call(self, arguments: dict[str, Any], *, run: bool = False) -> PlanOutcome:
        """Run the ``plan`` local activity for ``arguments`` (an edit plans them again); with
        ``run``, an allowed pure tool runs inside it."""
        try:
            outcome: PlanOutcome = await workflow.execute_local_activity(
                PLAN_ACTIVITY,
                PlanInput(
                    tool=self._request.tool,
                    arguments=arguments,
                    task_queue=self._request.task_queue,
                    profile=self._request.profile,
                    policy=self._request.policy,
                    call_id=self._call_id,
                    run=run,
                    **self._plan_context(),
                ),
                result_type=PlanOutcome,
                start_to_close_timeout=PLAN_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                raise asyncio.CancelledError() from None
            raise _Ended(
                self._end(CallStatus.FAILED, ErrorCode.INTERNAL, f"planning failed: {err.cause}")
            ) from None
        if outcome.plan is not None and outcome.attestation is not None:
            self._attestations[outcome.plan.digest] = outcome.attestation
        return outcome

    def _plan_context(self) -> dict[str, Any]:
        """Whom the call acts for and its parent, for the policies."""
        parent = workflow.info().parent
        return {
            "principal": self._request.principal,
            "parent": parent.workflow_id if parent else None,
        }

    async def _activity(
        self,
        plan: CallPlan,
        name: str,
        input: ExecuteInput,
        result_type: type | None,
        *,
        refusable: Collection[ErrorCode] = (),
    ) -> Any:
        """Run one of the tool's activities with the plan's options; end the call on failure,
        except that a tool error whose code is in ``refusable`` raises ``_Refused`` with its
        message for the caller to handle."""
        opts = plan.activity
        assert opts is not None
        schedule_to_close = self._bounded(None)
        retry = RetryPolicy(maximum_attempts=opts.maximum_attempts)
        started = workflow.now()
        # No ``finally`` for the bookkeeping: it would also run when a stopping worker drops the
        # workflow and the garbage collector closes this coroutine (GeneratorExit), where there is
        # no workflow clock.
        failure: tuple[BaseException | None, bool] | None = None
        try:
            if opts.local:
                output = await workflow.execute_local_activity(
                    name,
                    input,
                    result_type=result_type,
                    start_to_close_timeout=opts.start_to_close,
                    schedule_to_close_timeout=schedule_to_close,
                    retry_policy=retry,
                )
            else:
                output = await workflow.execute_activity(
                    name,
                    input,
                    result_type=result_type,
                    task_queue=opts.task_queue,
                    start_to_close_timeout=opts.start_to_close,
                    schedule_to_start_timeout=opts.schedule_to_start,
                    schedule_to_close_timeout=schedule_to_close,
                    heartbeat_timeout=opts.heartbeat,
                    retry_policy=retry,
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                )
        except ActivityError as err:
            failure = err.cause, err.started_event_id > 0
        except (ApplicationError, ActivityTimeoutError) as err:
            failure = err, True  # a local activity's failure arrives unwrapped
        except asyncio.CancelledError:
            self._ran += workflow.now() - started
            raise
        self._ran += workflow.now() - started
        if failure is not None:
            cause = failure[0]
            if isinstance(cause, ApplicationError) and cause.type in refusable:
                raise _Refused(cause.message)
            if failure[1] and name == plan.tool and canceled_write(plan, cause):
                status, message, output = after_canceled_write(plan.tool, cause)
                reason = workflow.cancellation_reason()
                self._event(EventKind.CANCEL_REQUESTED, f"while {plan.tool} ran: {reason}")
                code = ErrorCode.CANCELED if status is CallStatus.CANCELED else ErrorCode.UNCERTAIN
                raise _Ended(self._end(status, code, message, output=output))
            status, error, output = failed(plan, cause, started=failure[1])
            raise _Ended(self._end_with(status, error, output=output))
        return output

    def _execute_input(self, plan: CallPlan) -> ExecuteInput:
        return ExecuteInput(
            tool=plan.tool,
            arguments=plan.arguments,
            digest=plan.digest,
            call_id=self._call_id,
            idempotency_key=f"{self._workflow_id}:{self._call_id}",
            approval=self._approval,
            precondition=self._precondition,
            visible_tools=plan.visible_tools,
            attestation=self._attestations.get(plan.digest),
            principal=plan.principal.id if plan.connection and plan.principal else None,
        )

    async def _wait(self, done: Callable[[], bool], timeout: timedelta | None) -> bool:
        """Wait for ``done()`` up to ``timeout`` (forever for ``None``); whether it came true."""
        if timeout is not None and timeout <= timedelta(0):
            return done()
        started = workflow.now()
        try:
            await workflow.wait_condition(done, timeout=timeout)
            came_true = True
        except TimeoutError:
            came_true = False
        except asyncio.CancelledError:
            self._waited += workflow.now() - started
            raise
        self._waited += workflow.now() - started  # not a ``finally``: see ``_activity``
        return came_true

    def _bounded(self, timeout: timedelta | None) -> timedelta | None:
        """``timeout`` cut to what is left before the call's deadline."""
        if self._deadline is None:
            return timeout
        left = self._deadline - workflow.now()
        return left if timeout is None else min(timeout, left)

    def _check_budget(self, *, during_wait: bool = False) -> None:
        if self._deadline is None or workflow.now() < self._deadline:
            return
        status = CallStatus.TIMED_OUT if during_wait else CallStatus.DENIED
        raise _Ended(
            self._end(
                status,
                ErrorCode.BUDGET_EXCEEDED,
                f"{self._request.tool}: the call's deadline {self._deadline.isoformat()} passed",
            )
        )

    def _parse_signal(self, model: type[_Payload], payload: Any, verb: str) -> _Payload | None:
        """``payload`` as ``model``, or ``None`` with a ``signal_ignored`` event saying why."""
        try:
            return model.model_validate(payload)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "payload"
            self._event(
                EventKind.SIGNAL_IGNORED,
                f"{verb}: malformed {model.__name__}: {where}: {first['msg']}",
            )
            return None

    def _event(self, kind: EventKind, message: str = "") -> None:
        if kind is EventKind.SIGNAL_IGNORED and len(self._events) >= MAX_EVENTS:
            self._dropped_events += 1
            return
        self._events.append(CallEvent(at=workflow.now(), kind=kind, message=message))

    def _set_phase(self, phase: Phase, memo: dict[str, object] | None = None) -> None:
        self._phase = phase
        self._publish(phase.value)
        if memo:
            workflow.upsert_memo(memo)
        workflow.set_current_details(f"{phase.value.replace('_', ' ')}: {self._request.tool}")

    def _publish(self, status: str) -> None:
        """Upsert the status with any search attributes not yet written, in one command."""
        updates, self._search_updates = self._search_updates, []
        workflow.upsert_search_attributes([*updates, SEARCH_STATUS.value_set(status)])

    def _clear_pending(self) -> None:
        if self._pending_approval is None and self._pending_question is None:
            return
        self._pending_approval = self._pending_question = None
        workflow.upsert_memo({MEMO_PENDING_APPROVAL: None, MEMO_PENDING_QUESTION: None})

    def _end(
        self,
        status: CallStatus,
        code: ErrorCode | None = None,
        message: str = "",
        *,
        output: object = None,
    ) -> ToolCallResult:
        error = ToolError(code=code, message=message) if code is not None else None
        return self._end_with(status, error, output=output)

    def _end_with(
        self, status: CallStatus, error: ToolError | None, *, output: object = None
    ) -> ToolCallResult:
        if self._result is not None:
            return self._result
        now = workflow.now()  # one clock reading: workflow time does not move within a task
        if self._dropped_events:
            self._events.append(
                CallEvent(
                    at=now,
                    kind=EventKind.SIGNAL_IGNORED,
                    message=f"{self._dropped_events} more ignored signals not listed",
                )
            )
        finished = f"{status.value}: {error.message}" if error else status.value
        self._events.append(CallEvent(at=now, kind=EventKind.FINISHED, message=finished))
        plan = self._plan
        self._result = ToolCallResult(
            workflow_id=self._workflow_id,
            call_id=self._call_id,
            tool=plan.tool if plan else self._request.tool,
            status=status,
            output=output,
            error=error,
            approval=self._approval,
            approvals=list(self._approved_by),
            edits=list(self._edits),
            response=self._approval.response if self._approval else None,
            digest=plan.digest if plan else None,
            profile=self._request.profile,
            profile_digest=plan.profile_digest if plan else None,
            capabilities=plan.capabilities if plan else [],
            principal=self._request.principal.id if self._request.principal else None,
            events=list(self._events),
            started_at=self._started_at,
            finished_at=now,
            waited_seconds=self._waited.total_seconds(),
            run_seconds=self._ran.total_seconds(),
        )
        self._phase = Phase.DONE
        self._clear_pending()
        self._publish(status.value)
        workflow.set_current_details(f"{status.value}: {self._result.tool}")
        telemetry.call_ended(self._result, known=plan is not None or self._tool_known)
        return self._result
