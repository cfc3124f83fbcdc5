"""``ToolCallWorkflow``: one tool call, from the model's request to one typed result.

plan (local activity) -> decide (pure policy) -> [prepare -> wait for approval] -> execute
-> result.
``ask_user`` has no activity: the workflow asks and waits for the answer itself. Every wait is a
durable timer (or none, when the request says to wait forever), so a call survives worker and
server restarts, and every decision is in history. Tool failures never fail the workflow.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError, CancelledError

from toolcalls.workflows.call import telemetry
from toolcalls.workflows.call.connections import Connecting
from toolcalls.workflows.call.deadlines import refuse_late
from toolcalls.workflows.call.grants_and_notices import FINISHED_NOTICE_PATCH
from toolcalls.workflows.call.parts import _STATUS_FOR_CODE, _Ended
from toolcalls.workflows.call.progress import ProgressStream
from toolcalls.workflows.models.call import (
    MEMO_PENDING_QUESTION,
    WORKFLOW_NAME,
    CallPlan,
    CallState,
    CallStatus,
    Effect,
    ErrorCode,
    EventKind,
    Phase,
    PlanOutcome,
    ToolCallRequest,
    ToolCallResult,
)
from toolcalls.workflows.models.question import (
    MAX_ANSWER_CHARS,
    AskUserOutput,
    QuestionStatus,
    UserAnswer,
    UserQuestion,
)
from toolcalls.workflows.rules import policy


@workflow.defn(
    name=WORKFLOW_NAME,
    # A request that cannot be decoded (JSON nested deeper than pydantic's recursion limit, say)
    # fails the workflow at once instead of failing its first task forever.
    failure_exception_types=[ValidationError],
)
class ToolCallWorkflow(Connecting, ProgressStream):
    """Runs one tool call under the deployment's ceiling and the request's policy."""

    @workflow.init
    def __init__(self, request: ToolCallRequest) -> None:
        super().__init__(request)
        self._init_approvals()
        self._init_quotas()
        self._init_connections()
        self._init_progress()

    @workflow.run
    async def run(self, request: ToolCallRequest) -> ToolCallResult:
        try:
            result = await self._life()
        except _Ended as ended:
            result = ended.result
        except (asyncio.CancelledError, CancelledError):
            result = self._end(CallStatus.CANCELED, ErrorCode.CANCELED, _canceled_message())
        await self._release_unexecuted()
        # Only a request that asks for it reaches the patch: older requests had no ``notify``.
        if self._request.notify is not None and workflow.patched(FINISHED_NOTICE_PATCH):
            await self._notify_finished(result)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return result

    async def _life(self) -> ToolCallResult:
        plan = await self._planned()
        decision = self._decided(plan)
        if decision.effect is Effect.DENY:
            reasons = "; ".join(decision.reasons())
            self._event(EventKind.POLICY_DENIED, reasons)
            return self._end(
                CallStatus.DENIED,
                ErrorCode.POLICY_DENIED,
                f"{plan.tool}: denied by policy: {reasons}",
            )
        self._check_budget()
        if plan.consent is not None:
            await self._await_connection(plan)
        if plan.quotas:
            await self._reserve(plan)
        if decision.effect is Effect.REQUIRE_APPROVAL:
            plan = await self._approved(plan, decision)
            await self._attest_approval(plan)
        if plan.activity is None:
            return await self._ask_user(plan)
        outcome = self._outcome
        if outcome is not None and outcome.ran and decision.effect is Effect.ALLOW:
            return self._ran_in_plan(plan, outcome)
        return await self._execute(plan)

    def _decided(self, plan: CallPlan) -> policy.Decision:
        """The call's effect: the capability policies and, for a plan with ``[[policies]]``
        verdicts (recorded, never evaluated again), the enforced sets; logged with the shadow
        sets' effects.

        No ``workflow.patched`` here: the branch follows the recorded plan, and a plan made
        before policy sets existed has no verdicts, so its history takes the old path. (A patch
        tried here failed the ``cedar_approved`` replay with TMPRL1100; its cause was not
        established.)"""
        if not plan.policies:
            decision = policy.decide(
                plan.ceiling, self._request.policy, plan.tool, plan.capabilities
            )
            telemetry.decided(self._call_id, plan, decision.effect.value, decision.reasons())
            return decision
        decision = policy.decide_plan(plan, self._request.policy)
        shadow = [
            (name, effect.value) for name, effect in policy.shadow(plan, self._request.policy)
        ]
        for name, effect in shadow:
            if effect != decision.effect.value:
                self._event(
                    EventKind.SHADOW_DISAGREED,
                    f"policy set {name} would decide {effect}, not {decision.effect.value}",
                )
        reasons = decision.reasons() or [v.reason() for v in plan.policies]
        telemetry.decided(self._call_id, plan, decision.effect.value, reasons, shadow)
        return decision

    def _ran_in_plan(self, plan: CallPlan, outcome: PlanOutcome) -> ToolCallResult:
        """The outcome of a pure tool the plan ran: the call costs one local activity."""
        self._phase = Phase.RUNNING
        telemetry.executing(self._call_id, plan)
        self._event(EventKind.STARTED, f"{plan.tool} ran in the plan")
        error = outcome.run_error
        if error is not None:
            status = _STATUS_FOR_CODE.get(error.code, CallStatus.FAILED)
            return self._end_with(status, error, output=outcome.output)
        return self._end(CallStatus.COMPLETED, output=outcome.output)

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
        self._executed = True  # from here its quota units stay spent
        telemetry.executing(self._call_id, plan)
        output = await self._activity(plan, plan.tool, await self._tool_input(plan), None)
        return self._end(CallStatus.COMPLETED, output=output)

    # Answers --------------------------------------------------------------------------------

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
        refuse_late()
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
            principal=self._request.principal.id if self._request.principal else None,
            pending_connection=self._pending_connection,
        )


def _canceled_message() -> str:
    """What a canceled call says, with the reason the canceller gave (``toolcalls cancel
    --reason``)."""
    reason = workflow.cancellation_reason()
    return f"the call was canceled: {reason}" if reason else "the call was canceled"
