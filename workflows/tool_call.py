"""``ToolCallWorkflow``: one tool call, from the model's request to one typed result.

plan (local activity) -> decide (pure policy) -> [prepare -> wait for approval] -> execute
-> result.
``ask_user`` has no activity: the workflow asks and waits for the answer itself. Every wait is a
durable timer (or none, when the request says to wait forever), so a call survives worker and
server restarts, and every decision is in history. Tool failures never fail the workflow.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeUpdate
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutType,
)
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

from workflows import policy
from workflows.models import (
    MAX_ANSWER_CHARS,
    MEMO_PENDING_APPROVAL,
    MEMO_PENDING_QUESTION,
    PLAN_ACTIVITY,
    SEARCH_CAPABILITIES,
    SEARCH_STATUS,
    SEARCH_TOOL,
    WORKFLOW_NAME,
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    AskUserOutput,
    CallEvent,
    CallPlan,
    CallState,
    CallStatus,
    DecisionInput,
    Effect,
    ErrorCode,
    EventKind,
    ExecuteInput,
    Phase,
    PlanInput,
    PlanOutcome,
    Prepared,
    PreviewArtifact,
    QuestionStatus,
    SideEffect,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
    UserAnswer,
    UserQuestion,
    prepare_activity_name,
)

PLAN_TIMEOUT = timedelta(seconds=10)
MAX_EVENTS = 200
"""Beyond this, further ignored signals are only counted, so a flood cannot bloat the result."""
MAX_KEYWORD_CHARS = 200

_STATUS_FOR_CODE = {
    ErrorCode.POLICY_DENIED: CallStatus.DENIED,
    ErrorCode.APPROVAL_DENIED: CallStatus.DENIED,
    ErrorCode.APPROVAL_TIMED_OUT: CallStatus.DENIED,
    ErrorCode.BUDGET_EXCEEDED: CallStatus.DENIED,
    ErrorCode.TIMED_OUT: CallStatus.TIMED_OUT,
    ErrorCode.CANCELED: CallStatus.CANCELED,
    ErrorCode.UNCERTAIN: CallStatus.UNCERTAIN,
}
_KNOWN_CODES = {code.value for code in ErrorCode}
_Payload = TypeVar("_Payload", bound=BaseModel)


class _Ended(Exception):
    """Carries a finished result out of a nested step."""

    def __init__(self, result: ToolCallResult) -> None:
        super().__init__(result.status)
        self.result = result


@workflow.defn(
    name=WORKFLOW_NAME,
    # A request that cannot be decoded (JSON nested deeper than pydantic's recursion limit, say)
    # fails the workflow at once instead of failing its first task forever.
    failure_exception_types=[ValidationError],
)
class ToolCallWorkflow:
    """Runs one tool call under the deployment's ceiling and the request's policy."""

    @workflow.init
    def __init__(self, request: ToolCallRequest) -> None:
        info = workflow.info()
        self._request = request
        self._workflow_id = info.workflow_id
        self._call_id = request.call_id or info.workflow_id
        self._started_at = workflow.now()
        self._deadline = _deadline(request, self._started_at)
        self._phase = Phase.PLANNING
        self._plan: CallPlan | None = None
        self._events: list[CallEvent] = []
        self._dropped_events = 0
        self._pending_approval: ApprovalRequest | None = None
        self._approval: ApprovalRecord | None = None
        self._precondition: dict[str, object] | None = None
        self._pending_question: UserQuestion | None = None
        self._answer: UserAnswer | None = None
        self._waited = timedelta(0)
        self._ran = timedelta(0)
        self._result: ToolCallResult | None = None
        self._search_updates: list[SearchAttributeUpdate[Any]] = [
            SEARCH_TOOL.value_set(request.tool[:MAX_KEYWORD_CHARS])
        ]

    @workflow.run
    async def run(self, request: ToolCallRequest) -> ToolCallResult:
        try:
            result = await self._life()
        except _Ended as ended:
            result = ended.result
        except (asyncio.CancelledError, CancelledError):
            result = self._end(CallStatus.CANCELED, ErrorCode.CANCELED, "the call was canceled")
        await workflow.wait_condition(workflow.all_handlers_finished)
        return result

    async def _life(self) -> ToolCallResult:
        plan = await self._planned()
        decision = policy.decide(plan.ceiling, self._request.policy, plan.tool, plan.capabilities)
        if decision.effect is Effect.DENY:
            reasons = "; ".join(decision.reasons())
            self._event(EventKind.POLICY_DENIED, reasons)
            return self._end(
                CallStatus.DENIED,
                ErrorCode.POLICY_DENIED,
                f"{plan.tool}: denied by policy: {reasons}",
            )
        self._check_budget()
        if decision.effect is Effect.REQUIRE_APPROVAL:
            await self._approved(plan, decision)
        if plan.activity is None:
            return await self._ask_user(plan)
        return await self._execute(plan)

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
        try:
            outcome = await workflow.execute_local_activity(
                PLAN_ACTIVITY,
                PlanInput(
                    tool=self._request.tool,
                    arguments=self._request.arguments,
                    task_queue=self._request.task_queue,
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
        if outcome.plan is None:
            error = outcome.error or ToolError(code=ErrorCode.INTERNAL, message="plan gave nothing")
            raise _Ended(self._end_with(CallStatus.FAILED, error))
        plan: CallPlan = outcome.plan
        self._plan = plan
        self._search_updates += [
            SEARCH_TOOL.value_set(plan.tool),
            SEARCH_CAPABILITIES.value_set(plan.capabilities),
        ]
        caps = ", ".join(plan.capabilities) or "no capabilities"
        self._event(EventKind.PLANNED, f"{plan.tool} ({plan.side_effect.value}; {caps})")
        return plan

    async def _approved(self, plan: CallPlan, decision: policy.Decision) -> None:
        """Return once a human approved the call; end it otherwise."""
        # A tool's own preview replaces the plain arguments (which the request carries anyway):
        # the memo must not hold large arguments twice (payloads are limited to 2 MB).
        preview = [PreviewArtifact(kind="arguments", title="arguments", data=plan.arguments)]
        if plan.prepare:
            self._set_phase(Phase.PREPARING)
            prepared = await self._activity(
                plan, prepare_activity_name(plan.tool), self._execute_input(plan), Prepared
            )
            preview = prepared.preview
            self._precondition = prepared.precondition
            if workflow.cancellation_reason() is not None:
                # A prepare step that does not heartbeat never sees the cancellation and its
                # result swallows it; the call must not go on to ask for an approval.
                raise asyncio.CancelledError()
            self._check_budget()
        now = workflow.now()
        wait = self._bounded(self._request.approval_timeout)
        pending = ApprovalRequest(
            request_id=str(workflow.uuid4()),
            workflow_id=self._workflow_id,
            call_id=self._call_id,
            tool=plan.tool,
            arguments=plan.arguments,
            capabilities=plan.capabilities,
            digest=plan.digest,
            preview=preview,
            reasons=decision.reasons(),
            requested_at=now,
            expires_at=now + wait if wait is not None else None,
        )
        self._pending_approval = pending
        self._set_phase(Phase.AWAITING_APPROVAL, memo={MEMO_PENDING_APPROVAL: pending})
        self._event(EventKind.APPROVAL_REQUESTED, "; ".join(pending.reasons))
        timed_out = not await self._wait(lambda: self._approval is not None, wait)
        self._clear_pending()
        if timed_out:
            self._event(EventKind.APPROVAL_TIMED_OUT, "no decision before the request expired")
            self._check_budget(during_wait=True)
            raise _Ended(
                self._end(
                    CallStatus.DENIED,
                    ErrorCode.APPROVAL_TIMED_OUT,
                    f"{plan.tool}: no approval decision within the approval timeout",
                )
            )
        approval = self._approval
        assert approval is not None
        if not approval.approved:
            who = approval.approver or "an unnamed approver"
            because = f": {approval.reason}" if approval.reason else ""
            raise _Ended(
                self._end(
                    CallStatus.DENIED,
                    ErrorCode.APPROVAL_DENIED,
                    f"{plan.tool}: denied by {who}{because}",
                )
            )
        self._check_budget()

    async def _ask_user(self, plan: CallPlan) -> ToolCallResult:
        now = workflow.now()
        wait = self._bounded(plan.question_timeout)
        question = UserQuestion(
            request_id=str(workflow.uuid4()),
            workflow_id=self._workflow_id,
            call_id=self._call_id,
            question=plan.arguments["question"],
            options=plan.arguments.get("options") or [],
            asked_at=now,
            expires_at=now + wait if wait is not None else None,
        )
        self._pending_question = question
        self._set_phase(Phase.AWAITING_ANSWER, memo={MEMO_PENDING_QUESTION: question})
        self._event(EventKind.QUESTION_ASKED, question.question[:200])
        answered = await self._wait(lambda: self._answer is not None, wait)
        self._clear_pending()
        if not answered:
            self._event(EventKind.QUESTION_TIMED_OUT, "no answer before the question expired")
            self._check_budget(during_wait=True)
            status = QuestionStatus.TIMED_OUT
            text = None
        else:
            assert self._answer is not None
            text = self._answer.answer
            status = QuestionStatus.DECLINED if text is None else QuestionStatus.ANSWERED
        output = AskUserOutput(request_id=question.request_id, status=status, answer=text)
        return self._end(CallStatus.COMPLETED, output=output.model_dump(mode="json"))

    async def _execute(self, plan: CallPlan) -> ToolCallResult:
        assert plan.activity is not None
        if plan.activity.heartbeat is None:
            # A tool without a heartbeat runs for seconds at most: publishing "running" would cost
            # a visibility write per call for a state no one could see for long. Its search
            # attributes go out with the final status.
            self._phase = Phase.RUNNING
        else:
            self._set_phase(Phase.RUNNING)
        self._event(EventKind.STARTED, f"{plan.tool} scheduled")
        output = await self._activity(plan, plan.tool, self._execute_input(plan), None)
        return self._end(CallStatus.COMPLETED, output=output)

    async def _activity(
        self, plan: CallPlan, name: str, input: ExecuteInput, result_type: type | None
    ) -> Any:
        """Run one of the tool's activities with the plan's options; end the call on failure."""
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
            raise _Ended(self._failed(plan, failure[0], started=failure[1]))
        return output

    def _failed(
        self, plan: CallPlan, cause: BaseException | None, *, started: bool
    ) -> ToolCallResult:
        """Map an activity failure to the call's status and ``ToolError``."""
        tool = plan.tool
        if isinstance(cause, ApplicationError):
            details = (
                cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
            )
            kind = cause.type or ""
            code = ErrorCode(kind) if kind in _KNOWN_CODES else ErrorCode.EXECUTION_FAILED
            message = cause.message if code.value == kind else f"{tool}: {kind}: {cause.message}"
            error = ToolError(
                code=code,
                message=message,
                retryable=not cause.non_retryable,
                fixable_args=list(details.get("fixable_args") or []),
            )
            status = _STATUS_FOR_CODE.get(code, CallStatus.FAILED)
            return self._end_with(status, error, output=details.get("output"))
        if isinstance(cause, CancelledError):
            return self._end(CallStatus.CANCELED, ErrorCode.CANCELED, f"{tool}: canceled")
        if isinstance(cause, ActivityTimeoutError):
            return self._timed_out(
                plan, cause.type, started=started, progress=cause.last_heartbeat_details
            )
        return self._end(CallStatus.FAILED, ErrorCode.INTERNAL, f"{tool}: {cause}")

    def _timed_out(
        self,
        plan: CallPlan,
        kind: TimeoutType | None,
        *,
        started: bool,
        progress: Sequence[Any] = (),
    ) -> ToolCallResult:
        opts = plan.activity
        assert opts is not None
        tool = plan.tool
        if kind is TimeoutType.SCHEDULE_TO_START or (
            kind is TimeoutType.SCHEDULE_TO_CLOSE and not started and not opts.local
        ):
            error = ToolError(
                code=ErrorCode.TOOL_UNAVAILABLE,
                message=(
                    f"{tool}: no worker took the task from queue "
                    f"{opts.task_queue or workflow.info().task_queue!r} in time; nothing ran"
                ),
                retryable=True,
            )
            return self._end_with(CallStatus.FAILED, error)
        if plan.side_effect is SideEffect.WRITE:
            # The tool's last heartbeat is what it said it was doing (a creation's identity, say):
            # the output an operator inspects with. It is in history already, in the timeout.
            return self._end(
                CallStatus.UNCERTAIN,
                ErrorCode.UNCERTAIN,
                f"{tool}: the worker was lost after the tool started ({_name(kind)} timeout); "
                "the effect may have happened: inspect before calling again",
                output=_last_progress(progress),
            )
        return self._end(
            CallStatus.TIMED_OUT, ErrorCode.TIMED_OUT, f"{tool}: {_name(kind)} timeout"
        )

    def _execute_input(self, plan: CallPlan) -> ExecuteInput:
        return ExecuteInput(
            tool=plan.tool,
            arguments=plan.arguments,
            digest=plan.digest,
            call_id=self._call_id,
            idempotency_key=f"{self._workflow_id}:{self._call_id}",
            approval=self._approval,
            precondition=self._precondition,
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

    # Approvals and answers ------------------------------------------------------------------

    @workflow.update
    def decide(self, decision: ApprovalDecision) -> ApprovalRecord:
        """Approve or deny the pending request; the first valid decision wins."""
        problem = self._decision_problem(decision)
        if problem:
            raise ApplicationError(problem, type="rejected", non_retryable=True)
        return self._accept(decision, decision.approved, "update")

    @decide.validator
    def _validate_decide(self, decision: ApprovalDecision) -> None:
        problem = self._decision_problem(decision)
        if problem:
            raise ValueError(problem)

    @workflow.signal
    def approve(self, decision: Any) -> None:
        """Fire-and-forget approval (a ``DecisionInput``); an invalid one is logged and ignored.

        Signals take any JSON and validate it here: the SDK would drop a payload that failed to
        decode against a model without a trace, and an ignored signal must leave one.
        """
        self._signal_decision(decision, approved=True)

    @workflow.signal
    def deny(self, decision: Any) -> None:
        """Fire-and-forget denial (a ``DecisionInput``); an invalid one is logged and ignored."""
        self._signal_decision(decision, approved=False)

    def _signal_decision(self, payload: Any, *, approved: bool) -> None:
        verb = "approve" if approved else "deny"
        decision = self._parse_signal(DecisionInput, payload, verb)
        if decision is None:
            return
        problem = self._decision_problem(decision)
        if problem:
            self._event(
                EventKind.SIGNAL_IGNORED,
                f"{verb} from {decision.approver or 'an unnamed sender'}: {problem}",
            )
            return
        self._accept(decision, approved, "signal")

    def _parse_signal(self, model: type[_Payload], payload: Any, verb: str) -> _Payload | None:
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

    def _decision_problem(self, decision: DecisionInput) -> str | None:
        pending = self._pending_approval
        if pending is None:
            if self._approval is not None:
                return "the request was already decided"
            return "no approval is pending"
        if decision.request_id != pending.request_id:
            return f"unknown or stale request id {decision.request_id!r}"
        if decision.digest != pending.digest:
            return "digest does not match the pending request"
        if self._approval is not None:
            return "the request was already decided"
        if pending.expires_at is not None and workflow.now() >= pending.expires_at:
            return "the approval request has expired"
        return None

    def _accept(self, decision: DecisionInput, approved: bool, via: str) -> ApprovalRecord:
        record = ApprovalRecord(
            request_id=decision.request_id,
            digest=decision.digest,
            approved=approved,
            approver=decision.approver,
            reason=decision.reason,
            decided_at=workflow.now(),
            via=via,
        )
        self._approval = record
        # Logged as it is accepted, so that a decision it beat in the same workflow task (and
        # which is logged as ignored at once) comes after it, as in history.
        who = record.approver or "an unnamed approver"
        because = f": {record.reason}" if record.reason else ""
        kind = EventKind.APPROVAL_GRANTED if approved else EventKind.APPROVAL_DENIED
        self._event(kind, f"by {who} via {via}{because}")
        return record

    @workflow.update
    def answer(self, answer: UserAnswer) -> AskUserOutput:
        """Answer (or, with ``answer=None``, decline) the pending question."""
        problem = self._answer_problem(answer)
        if problem:
            raise ApplicationError(problem, type="rejected", non_retryable=True)
        self._accept_answer(answer)
        status = QuestionStatus.DECLINED if answer.answer is None else QuestionStatus.ANSWERED
        return AskUserOutput(request_id=answer.request_id, status=status, answer=answer.answer)

    @answer.validator
    def _validate_answer(self, answer: UserAnswer) -> None:
        problem = self._answer_problem(answer)
        if problem:
            raise ValueError(problem)

    @workflow.signal
    def answer_signal(self, payload: Any) -> None:
        """Fire-and-forget answer (a ``UserAnswer``); an invalid one is logged and ignored."""
        answer = self._parse_signal(UserAnswer, payload, "answer")
        if answer is None:
            return
        problem = self._answer_problem(answer)
        if problem:
            who = answer.responder or "an unnamed sender"
            self._event(EventKind.SIGNAL_IGNORED, f"answer from {who}: {problem}")
            return
        self._accept_answer(answer)

    def _accept_answer(self, answer: UserAnswer) -> None:
        self._answer = answer
        kind = EventKind.QUESTION_DECLINED if answer.answer is None else EventKind.QUESTION_ANSWERED
        self._event(kind, f"by {answer.responder or 'the user'}")  # logged as accepted: see _accept

    def _answer_problem(self, answer: UserAnswer) -> str | None:
        pending = self._pending_question
        if pending is None or self._answer is not None:
            return "no question is pending"
        if answer.request_id != pending.request_id:
            return f"unknown or stale request id {answer.request_id!r}"
        if pending.expires_at is not None and workflow.now() >= pending.expires_at:
            return "the question has expired"
        if answer.answer is not None:
            if not answer.answer.strip():
                return "the answer is blank; send null to decline"
            if len(answer.answer) > MAX_ANSWER_CHARS:
                size = len(answer.answer)
                return f"the answer has {size} characters; the limit is {MAX_ANSWER_CHARS}"
        return None

    @workflow.query
    def status(self) -> CallState:
        """Where the call is, what it waits for, its events and (once done) its result."""
        return CallState(
            workflow_id=self._workflow_id,
            call_id=self._call_id,
            tool=self._request.tool,
            phase=self._phase,
            capabilities=self._plan.capabilities if self._plan else [],
            pending_approval=self._pending_approval,
            pending_question=self._pending_question,
            events=list(self._events),
            result=self._result,
        )

    # Bookkeeping -----------------------------------------------------------------------------

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
        if self._dropped_events:
            self._events.append(
                CallEvent(
                    at=workflow.now(),
                    kind=EventKind.SIGNAL_IGNORED,
                    message=f"{self._dropped_events} more ignored signals not listed",
                )
            )
        finished = f"{status.value}: {error.message}" if error else status.value
        self._events.append(CallEvent(at=workflow.now(), kind=EventKind.FINISHED, message=finished))
        plan = self._plan
        self._result = ToolCallResult(
            workflow_id=self._workflow_id,
            call_id=self._call_id,
            tool=plan.tool if plan else self._request.tool,
            status=status,
            output=output,
            error=error,
            approval=self._approval,
            digest=plan.digest if plan else None,
            capabilities=plan.capabilities if plan else [],
            events=list(self._events),
            started_at=self._started_at,
            finished_at=workflow.now(),
            waited_seconds=self._waited.total_seconds(),
            run_seconds=self._ran.total_seconds(),
        )
        self._phase = Phase.DONE
        self._clear_pending()
        self._publish(status.value)
        workflow.set_current_details(f"{status.value}: {self._result.tool}")
        return self._result


def _non_finite(arguments: dict[str, Any]) -> list[str]:
    """The arguments holding a NaN or an infinity anywhere inside (checked without recursion)."""
    bad = []
    for name, value in arguments.items():
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                bad.append(name)
                break
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return bad


def _deadline(request: ToolCallRequest, started: datetime) -> datetime | None:
    """The earlier of ``deadline`` and ``started + timeout``; ``None`` when neither is set."""
    candidates = []
    if request.deadline is not None:
        # A naive time cannot be compared with workflow time: the TypeError would fail every
        # workflow task forever. Read it as UTC, like every time Temporal records.
        deadline = request.deadline
        candidates.append(deadline if deadline.tzinfo else deadline.replace(tzinfo=UTC))
    if request.timeout is not None:
        candidates.append(started + request.timeout)
    return min(candidates, default=None)


def _last_progress(details: Sequence[Any]) -> dict[str, Any] | None:
    """The progress a tool last heartbeated (``activities.heartbeat``), if it was an object."""
    last = details[-1] if details else None
    return last if isinstance(last, dict) else None


def _name(kind: TimeoutType | None) -> str:
    return kind.name.lower().replace("_", "-") if kind is not None else "unknown"
