"""Malformed signal payloads: logged as ``signal_ignored`` events, never silently dropped.

Signals that arrive together are logged in history order: the one that won before the one it beat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from temporalio.client import Client

from tests.support.harness import (
    make_config,
    pending_approval,
    pending_question,
    running_worker,
    signal_decision,
    start_call,
    wait_for,
)
from tests.support.tools import ProbeTools
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallEvent,
    CallStatus,
    EventKind,
)
from toolcalls.workflows.models.question import (
    QuestionStatus,
    UserAnswer,
)


def ignored(events: Sequence[CallEvent]) -> list[str]:
    return [e.message for e in events if e.kind is EventKind.SIGNAL_IGNORED]


async def test_malformed_decisions_are_recorded(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "m"})
        pending = await pending_approval(handle)
        await handle.signal("approve", {"request_id": pending.request_id})
        await handle.signal("deny", "no")
        # The update's payload sent to the signal: "approved" is not a signal field.
        await handle.signal(
            "approve",
            {"request_id": pending.request_id, "digest": pending.digest, "approved": False},
        )
        await handle.signal(
            "approve", {**signal_decision(pending).model_dump(), "reason": "x" * 2001}
        )
        await wait_for(handle, lambda s: len(ignored(s.events)) == 4)
        await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, "bob"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "bob"
    assert probes.runs == {"probe_write": 1}
    messages = ignored(result.events)
    assert messages[0] == "approve: malformed DecisionInput: digest: Field required"
    assert messages[1].startswith("deny: malformed DecisionInput: payload: ")
    assert messages[2] == (
        "approve: malformed DecisionInput: approved: Extra inputs are not permitted"
    )
    assert messages[3].startswith("approve: malformed DecisionInput: reason: String should have at")


async def test_malformed_answer_is_recorded(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "ask_user", {"question": "Ready?"})
        question = await pending_question(handle)
        await handle.signal("answer_signal", {"answer": "yes"})
        await wait_for(handle, lambda s: len(ignored(s.events)) == 1)
        await handle.signal(
            ToolCallWorkflow.answer_signal,
            UserAnswer(request_id=question.request_id, answer="yes"),
        )
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output["status"] == QuestionStatus.ANSWERED.value
    assert ignored(result.events) == ["answer: malformed UserAnswer: request_id: Field required"]


def kinds(events: Sequence[CallEvent]) -> list[tuple[EventKind, str]]:
    return [(e.kind, e.message) for e in events]


async def test_a_decision_is_logged_before_the_one_it_beat(client: Client, task_queue: str) -> None:
    config = make_config(task_queue)
    probes = ProbeTools()
    async with running_worker(client, config, probes):
        handle = await start_call(client, task_queue, "probe_write", {"token": "both"})
        pending = await pending_approval(handle)
    # With no worker running both signals wait in history and arrive in one workflow task.
    await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, "alice"))
    await handle.signal(ToolCallWorkflow.deny, signal_decision(pending, "bob"))
    async with running_worker(client, config, probes):
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert [kind for kind, _ in kinds(result.events)][1:4] == [
        EventKind.APPROVAL_REQUESTED,
        EventKind.APPROVAL_GRANTED,
        EventKind.SIGNAL_IGNORED,
    ]
    assert kinds(result.events)[2:4] == [
        (EventKind.APPROVAL_GRANTED, "by alice via signal"),
        (EventKind.SIGNAL_IGNORED, "deny from bob: the request was already decided"),
    ]


async def test_an_answer_is_logged_before_the_one_it_beat(client: Client, task_queue: str) -> None:
    config = make_config(task_queue)
    async with running_worker(client, config):
        handle = await start_call(client, task_queue, "ask_user", {"question": "Ready?"})
        question = await pending_question(handle)
    for text, who in (("yes", "carol"), ("no", "dave")):
        answer = UserAnswer(request_id=question.request_id, answer=text, responder=who)
        await handle.signal(ToolCallWorkflow.answer_signal, answer)
    async with running_worker(client, config):
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.output["answer"] == "yes"
    assert kinds(result.events)[1:4] == [
        (EventKind.QUESTION_ASKED, "Ready?"),
        (EventKind.QUESTION_ANSWERED, "by carol"),
        (EventKind.SIGNAL_IGNORED, "answer from dave: no question is pending"),
    ]
