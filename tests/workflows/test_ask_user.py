"""ask_user: the workflow asks, waits durably, and returns answered, declined or timed_out."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from tests.support.harness import (
    Handle,
    decision,
    history_types,
    listed,
    make_config,
    pending_approval,
    pending_question,
    run_call,
    running_worker,
    start_call,
    update_rejection,
    wait_for,
)
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import ApprovalDecision, DecisionInput
from toolcalls.workflows.models.call import (
    MEMO_PENDING_QUESTION,
    SEARCH_CAPABILITIES,
    SEARCH_STATUS,
    SEARCH_TOOL,
    CallEvent,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    EventKind,
    Phase,
)
from toolcalls.workflows.models.question import (
    MAX_ANSWER_CHARS,
    AskUserOutput,
    QuestionStatus,
    UserAnswer,
    UserQuestion,
)

ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
TIMER_STARTED = EventType.EVENT_TYPE_TIMER_STARTED
ASK = {"question": "Which format?", "options": ["JSON", "CSV"]}


def reply(question: UserQuestion, answer: str | None, responder: str = "dana") -> UserAnswer:
    return UserAnswer(request_id=question.request_id, answer=answer, responder=responder)


async def rejection(handle: Handle, sent: UserAnswer) -> str:
    return await update_rejection(handle, ToolCallWorkflow.answer, sent)


def kinds(events: list[CallEvent]) -> list[EventKind]:
    return [e.kind for e in events]


async def test_answered_via_update(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "ask_user", ASK, call_id="toolu_q")
        question = await pending_question(handle)
        assert (question.workflow_id, question.call_id) == (handle.id, "toolu_q")
        assert (question.question, question.options) == ("Which format?", ["JSON", "CSV"])
        assert question.expires_at == question.asked_at + timedelta(seconds=300)

        description = await handle.describe()
        memo = await description.memo_value(MEMO_PENDING_QUESTION, type_hint=UserQuestion)
        assert memo == question
        attributes = description.typed_search_attributes
        assert attributes.get(SEARCH_STATUS) == "awaiting_answer"
        assert attributes.get(SEARCH_TOOL) == "ask_user"
        assert attributes.get(SEARCH_CAPABILITIES) == ["user.interact"]
        found = await listed(client, 'ToolCallStatus="awaiting_answer"', handle.id)
        assert await found.memo_value(MEMO_PENDING_QUESTION, type_hint=UserQuestion) == question

        output = await handle.execute_update(ToolCallWorkflow.answer, reply(question, "CSV"))
        result = await handle.result()

    assert output == AskUserOutput(
        request_id=question.request_id, status=QuestionStatus.ANSWERED, answer="CSV"
    )
    assert result.status is CallStatus.COMPLETED
    assert result.output == {
        "request_id": question.request_id,
        "status": "answered",
        "answer": "CSV",
    }
    assert result.error is None
    assert result.approval is None
    assert result.capabilities == ["user.interact"]
    assert kinds(result.events) == [
        EventKind.PLANNED,
        EventKind.QUESTION_ASKED,
        EventKind.QUESTION_ANSWERED,
        EventKind.FINISHED,
    ]
    assert result.events[1].message == "Which format?"
    assert result.events[2].message == "by dana"
    assert result.events[1].at == question.asked_at
    assert result.waited_seconds > 0
    assert probes.runs == {}
    description = await handle.describe()
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "completed"
    assert MEMO_PENDING_QUESTION not in await description.memo()
    assert (await history_types(handle)).count(ACCEPTED) == 1


async def test_answered_via_signal_keeps_the_exact_text(client: Client, task_queue: str) -> None:
    text = "  CSV, please \u2014 with headers\n"
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "ask_user", ASK)
        question = await pending_question(handle)
        await handle.signal(ToolCallWorkflow.answer_signal, reply(question, text))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output == {
        "request_id": question.request_id,
        "status": "answered",
        "answer": text,
    }
    assert ACCEPTED not in await history_types(handle)


@pytest.mark.parametrize("via", ["update", "signal"])
async def test_declined(client: Client, task_queue: str, via: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "ask_user", ASK)
        question = await pending_question(handle)
        if via == "update":
            output = await handle.execute_update(ToolCallWorkflow.answer, reply(question, None))
            assert (output.status, output.answer) == (QuestionStatus.DECLINED, None)
        else:
            await handle.signal(ToolCallWorkflow.answer_signal, reply(question, None))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output == {
        "request_id": question.request_id,
        "status": "declined",
        "answer": None,
    }
    assert EventKind.QUESTION_DECLINED in kinds(result.events)


async def test_timed_out_question_has_no_answer(client: Client, task_queue: str) -> None:
    config = make_config(task_queue, activities={"question_timeout_seconds": 2})
    async with running_worker(client, config):
        handle = await start_call(client, task_queue, "ask_user", ASK)
        question = await pending_question(handle)
        assert question.expires_at == question.asked_at + timedelta(seconds=2)
        result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is CallStatus.COMPLETED
    assert result.error is None
    assert result.output == {
        "request_id": question.request_id,
        "status": "timed_out",
        "answer": None,
    }
    assert EventKind.QUESTION_TIMED_OUT in kinds(result.events)
    assert 2 <= result.waited_seconds < 10
    assert TIMER_STARTED in await history_types(handle)
    assert MEMO_PENDING_QUESTION not in await (await handle.describe()).memo()


async def test_call_budget_bounds_the_question(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "ask_user", ASK, timeout=timedelta(seconds=2))
        question = await pending_question(handle)
        assert question.expires_at is not None
        assert question.expires_at <= question.asked_at + timedelta(seconds=2)
        result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is CallStatus.TIMED_OUT
    assert result.error is not None
    assert result.error.code is ErrorCode.BUDGET_EXCEEDED
    assert result.output is None


async def test_rejected_answers_leave_nothing_in_history(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "ask_user", ASK)
        question = await pending_question(handle)
        blank = await rejection(handle, reply(question, " \n\t"))
        assert blank == "the answer is blank; send null to decline"
        too_long = await rejection(handle, reply(question, "x" * (MAX_ANSWER_CHARS + 1)))
        assert too_long == "the answer has 16385 characters; the limit is 16384"
        wrong = await rejection(
            handle, reply(question, "CSV").model_copy(update={"request_id": "q"})
        )
        assert wrong == "unknown or stale request id 'q'"
        # None of them answered: the question is still pending.
        assert (await wait_for(handle, lambda s: True)).pending_question == question

        longest = "y" * MAX_ANSWER_CHARS
        output = await handle.execute_update(ToolCallWorkflow.answer, reply(question, longest))
        result = await handle.result()
    assert output.answer == longest
    assert result.output["answer"] == longest
    assert EventKind.SIGNAL_IGNORED not in kinds(result.events)
    assert (await history_types(handle)).count(ACCEPTED) == 1


async def test_second_answer_is_rejected(client: Client, task_queue: str) -> None:
    config = make_config(task_queue)
    async with running_worker(client, config):
        handle = await start_call(client, task_queue, "ask_user", ASK)
        question = await pending_question(handle)
    # Both answers wait for a worker, so both reach the workflow in one task: the first one is
    # accepted and the second must be refused by the validator, not by the call having ended.
    first = asyncio.create_task(
        handle.execute_update(ToolCallWorkflow.answer, reply(question, "JSON", "dana"))
    )
    await asyncio.sleep(0.5)
    second = asyncio.create_task(rejection(handle, reply(question, "CSV", "erin")))
    await asyncio.sleep(0.5)
    async with running_worker(client, config):
        output = await asyncio.wait_for(first, 30)
        reason = await asyncio.wait_for(second, 30)
        result = await handle.result()
    assert (output.status, output.answer) == (QuestionStatus.ANSWERED, "JSON")
    assert reason == "no question is pending"
    assert result.output["answer"] == "JSON"
    assert (await history_types(handle)).count(ACCEPTED) == 1


async def test_answers_and_decisions_need_the_matching_wait(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        writing = await start_call(client, task_queue, "probe_write", {"token": "q"})
        approval = await pending_approval(writing)
        asking = await start_call(client, task_queue, "ask_user", ASK)
        question = await pending_question(asking)

        # An answer to a call that waits for an approval, even one carrying its request id.
        sent = UserAnswer(request_id=approval.request_id, answer="yes", responder="mallory")
        assert await rejection(writing, sent) == "no question is pending"
        await writing.signal(ToolCallWorkflow.answer_signal, sent)
        # A decision on a call that waits for an answer, even one carrying its request id.
        decision = ApprovalDecision(
            request_id=question.request_id, digest="x", approved=True, approver="mallory"
        )
        with pytest.raises(WorkflowUpdateFailedError) as info:
            await asking.execute_update(ToolCallWorkflow.decide, decision)
        assert isinstance(info.value.cause, ApplicationError)
        assert info.value.cause.message == "no approval is pending"
        await asking.signal(
            ToolCallWorkflow.approve,
            DecisionInput(request_id=question.request_id, digest="x", approver="mallory"),
        )

        ignored = EventKind.SIGNAL_IGNORED
        state = await wait_for(writing, lambda s: ignored in kinds(s.events))
        assert state.phase is Phase.AWAITING_APPROVAL
        assert state.events[-1].message == "answer from mallory: no question is pending"
        state = await wait_for(asking, lambda s: ignored in kinds(s.events))
        assert state.phase is Phase.AWAITING_ANSWER
        assert state.events[-1].message == "approve from mallory: no approval is pending"
        for handle in (writing, asking):
            await handle.cancel()
            assert (await handle.result()).status is CallStatus.CANCELED
            assert ACCEPTED not in await history_types(handle)
    assert probes.runs == {}


@pytest.mark.parametrize(
    ("arguments", "fixable"),
    [
        ({"question": "q" * 8_001}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "?", "options": [f"o{i}" for i in range(11)]}, "options"),
        ({"question": "?", "options": ["JSON", "JSON"]}, "options"),
        ({"question": "?", "options": ["JSON", " "]}, "options"),
        ({"question": "?", "options": ["o" * 501]}, "options"),
    ],
    ids=["long-question", "blank-question", "11-options", "duplicates", "blank-option", "long"],
)
async def test_question_over_the_limits_is_fixable(
    client: Client, task_queue: str, arguments: dict[str, object], fixable: str
) -> None:
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(client, task_queue, "ask_user", arguments)
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == [fixable]
    assert kinds(result.events) == [EventKind.FINISHED]


async def test_question_at_the_limits_is_asked(client: Client, task_queue: str) -> None:
    options = [f"{i}" + "o" * 499 for i in range(10)]
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(
            client, task_queue, "ask_user", {"question": "q" * 8_000, "options": options}
        )
        question = await pending_question(handle)
        assert len(question.question) == 8_000
        assert question.options == options
        # Suggested options never restrict the answer.
        await handle.signal(ToolCallWorkflow.answer_signal, reply(question, "none of these"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output["answer"] == "none of these"
    assert len(result.events[1].message) == 200


async def test_policy_can_deny_user_interact(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(
            client,
            task_queue,
            "ask_user",
            ASK,
            policy=CapabilityPolicy(rules={"user.interact": Effect.DENY}),
        )
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.POLICY_DENIED
    assert "user.interact: deny (request rule user.interact)" in result.error.message
    assert EventKind.QUESTION_ASKED not in kinds(result.events)


@pytest.mark.parametrize("approved", [True, False])
async def test_approval_comes_before_the_question(
    client: Client, task_queue: str, approved: bool
) -> None:
    policy = CapabilityPolicy(rules={"user.interact": Effect.REQUIRE_APPROVAL})
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "ask_user", ASK, policy=policy)
        approval = await pending_approval(handle)
        assert approval.tool == "ask_user"
        assert approval.capabilities == ["user.interact"]
        assert approval.reasons == ["user.interact: require_approval (request rule user.interact)"]
        assert [a.kind for a in approval.preview] == ["arguments"]
        assert (await handle.describe()).typed_search_attributes.get(SEARCH_STATUS) == (
            "awaiting_approval"
        )
        # No question is pending yet, so nothing can answer it.
        early = UserAnswer(request_id=approval.request_id, answer="CSV")
        assert await rejection(handle, early) == "no question is pending"

        await handle.execute_update(ToolCallWorkflow.decide, decision(approval, approved))
        if approved:
            question = await pending_question(handle)
            assert question.request_id != approval.request_id
            await handle.execute_update(ToolCallWorkflow.answer, reply(question, "CSV"))
        result = await handle.result()

    assert result.approval is not None
    assert result.approval.approved is approved
    if approved:
        assert result.status is CallStatus.COMPLETED
        assert result.output["answer"] == "CSV"
        assert kinds(result.events) == [
            EventKind.PLANNED,
            EventKind.APPROVAL_REQUESTED,
            EventKind.APPROVAL_GRANTED,
            EventKind.QUESTION_ASKED,
            EventKind.QUESTION_ANSWERED,
            EventKind.FINISHED,
        ]
    else:
        assert result.status is CallStatus.DENIED
        assert result.error is not None
        assert result.error.code is ErrorCode.APPROVAL_DENIED
        assert EventKind.QUESTION_ASKED not in kinds(result.events)
