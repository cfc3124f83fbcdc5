"""Inline calls: ``ToolCalls(inline=True)`` runs calls inside the parent, with no child workflow.

The same plan, policy, approval wait and result as a child; fewer events; the waiting calls are
listed, shown and decided through ``ToolCallClient`` like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.support.harness import history_types, make_config, running_worker
from tests.support.inline import app_worker, inline_config, listed, start_parent, viewed
from tests.support.parents import AgentParent, ParentInput
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.call import (
    SEARCH_INLINE_WAITING,
    CallState,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    Phase,
    ToolCallRequest,
)
from toolcalls.workflows.models.inline import (
    INLINE_APPROVE,
    MEMO_INLINE_PENDING,
    InlineDecisionInput,
)
from toolcalls.workflows.reach.client import Delivery, NoPendingRequest, ToolCallClient
from toolcalls.workflows.reach.client_inline import InlineRef, InlineRoutes

CHILD_STARTED = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
ACTIVITY_SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
UPSERTS = {
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
}
ALLOW_ALL = {"default_effect": "allow"}
NEEDS_APPROVAL = CapabilityPolicy(
    tools={"calculator": Effect.REQUIRE_APPROVAL, "probe_write": Effect.REQUIRE_APPROVAL}
)


def calc(call_id: str, expression: str = "6 * 7") -> ToolCallRequest:
    return ToolCallRequest(tool="calculator", arguments={"expression": expression}, call_id=call_id)


def write(call_id: str, token: str = "t") -> ToolCallRequest:
    return ToolCallRequest(tool="probe_write", arguments={"token": token}, call_id=call_id)


@asynccontextmanager
async def served_parent(
    client: Client,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
    *batch: ToolCallRequest,
    **inputs: Any,
) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    """A parent, served, making ``batch`` inline under ``NEEDS_APPROVAL`` (``inputs`` added)."""
    async with (
        running_worker(client, inline_config(task_queue, monkeypatch)),
        app_worker(client) as queue,
    ):
        yield await start_parent(
            client,
            queue,
            ParentInput(
                task_queue=task_queue,
                batches=[list(batch)],
                policy=NEEDS_APPROVAL,
                inline=True,
                **inputs,
            ),
        )


async def replays(handle: object) -> None:
    history = await handle.fetch_history()  # type: ignore[attr-defined]
    replay = await Replayer(
        workflows=[AgentParent],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    ).replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None


async def test_an_allowed_call_runs_in_the_parent_with_fewer_events(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue)), app_worker(client) as queue:
        inline = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=[[calc("a")]], inline=True)
        )
        child = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=[[calc("a")]])
        )
        inline_output = await asyncio.wait_for(inline.result(), 30)
        child_output = await asyncio.wait_for(child.result(), 30)
        # The call's end did not write its status over the parent's current details.
        metadata = await inline.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        assert metadata.current_details == ""

    [result] = inline_output.results
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "6 * 7", "result": 42}
    assert result.workflow_id == f"{inline.id}/tools/a"
    assert result.call_id == "a"
    assert [e.kind.value for e in result.events] == ["planned", "started", "finished"]
    # The same result as a child's, but for the ids and times.
    [through_child] = child_output.results
    assert through_child.output == result.output
    assert through_child.capabilities == result.capabilities == []
    assert through_child.digest == result.digest

    events = await history_types(inline)
    assert CHILD_STARTED not in events
    # One activity (the plan, which ran the pure tool); nothing published for an allowed call.
    assert events.count(ACTIVITY_SCHEDULED) == 1
    assert not UPSERTS & set(events)
    child_events = await history_types(child)
    child_own = await history_types(client.get_workflow_handle(f"{child.id}/tools/a"))
    assert len(events) < len(child_events) < len(child_events) + len(child_own)
    await replays(inline)


async def test_a_write_runs_inline_with_the_deployments_attestation(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = inline_config(task_queue, monkeypatch, ceiling=ALLOW_ALL)
    async with running_worker(client, config) as probes, app_worker(client) as queue:
        parent = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=[[write("w")]], inline=True)
        )
        output = await asyncio.wait_for(parent.result(), 30)
    [result] = output.results
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output == {
        "token": "t",
        "idempotency_key": f"{parent.id}/tools/w:w",
        "approved_by": None,
    }
    assert probes.runs == {"probe_write": 1}
    events = await history_types(parent)
    assert CHILD_STARTED not in events
    assert events.count(ACTIVITY_SCHEDULED) == 2  # the plan, then the tool


async def test_an_inline_approval_is_listed_shown_and_approved_by_update(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    config = inline_config(task_queue, monkeypatch, ceiling=ALLOW_ALL)
    batch = [calc("a"), write("b")]
    async with running_worker(client, config) as probes, app_worker(client) as queue:
        parent = await start_parent(
            client,
            queue,
            ParentInput(task_queue=task_queue, batches=[batch], policy=NEEDS_APPROVAL, inline=True),
        )
        ids = [f"{parent.id}/tools/{c}" for c in "ab"]
        listed_a = await listed(calls, ids[0])
        listed_b = await listed(calls, ids[1])
        assert listed_a.parent_id == parent.id
        assert listed_a.inline
        assert listed_a.approval is not None
        assert listed_a.approval.workflow_id == ids[0]
        assert listed_a.approval.arguments == {"expression": "6 * 7"}
        assert listed_b.approval is not None
        assert listed_b.approval.preview[0].text == "+t\n"  # prepared on the deployment
        assert listed_b.capabilities == ["filesystem.write"]
        description = await parent.describe()
        assert description.typed_search_attributes.get(SEARCH_INLINE_WAITING) == 2
        memo = await description.memo()
        assert [entry["call_id"] for entry in memo[MEMO_INLINE_PENDING]] == ["a", "b"]
        page = await calls.pending_page()
        assert page.total >= 2
        assert {c.workflow_id for c in page.calls} >= set(ids)

        view = await calls.status(ids[1])
        assert view.live
        assert view.state.phase is Phase.AWAITING_APPROVAL
        assert view.state.workflow_id == ids[1]

        approved = await calls.approve(ids[0], approver="alice")
        assert approved.delivery is Delivery.ACCEPTED
        denied = await calls.deny(ids[1], approver="bob", reason="not now")
        assert denied.delivery is Delivery.ACCEPTED
        with pytest.raises(NoPendingRequest, match="tools/b: no approval is pending"):
            await calls.approve(ids[1], approver="carol")
        output = await asyncio.wait_for(parent.result(), 30)

    calc_result, write_result = output.results
    assert calc_result.status is CallStatus.COMPLETED
    assert calc_result.output == {"expression": "6 * 7", "result": 42}
    assert calc_result.approval is not None
    assert (calc_result.approval.approver, calc_result.approval.via) == ("alice", "update")
    assert write_result.status is CallStatus.DENIED
    assert write_result.error is not None
    assert write_result.error.code is ErrorCode.APPROVAL_DENIED
    assert write_result.error.message == "probe_write: denied by bob: not now"
    assert probes.runs == {}
    events = await history_types(parent)
    assert CHILD_STARTED not in events
    description = await parent.describe()
    assert description.typed_search_attributes.get(SEARCH_INLINE_WAITING) == 0
    assert MEMO_INLINE_PENDING not in await description.memo()
    await replays(parent)


async def test_an_inline_approval_by_signal_and_one_queued_without_a_worker(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    batch = [calc("a"), calc("b", "1 + 1")]
    async with running_worker(client, inline_config(task_queue, monkeypatch)):
        async with app_worker(client) as queue:
            parent = await start_parent(
                client,
                queue,
                ParentInput(
                    task_queue=task_queue, batches=[batch], policy=NEEDS_APPROVAL, inline=True
                ),
            )
            a, b = (f"{parent.id}/tools/{c}" for c in "ab")
            await listed(calls, a)
            pending_a = await calls.pending_approval(a)
            # A fire-and-forget signal, as the Temporal UI sends it: the call id and the decision.
            await parent.signal(
                INLINE_APPROVE,
                InlineDecisionInput(
                    call_id="a",
                    request_id=pending_a.request_id,
                    digest=pending_a.digest,
                    approver="ui",
                ),
            )
            await viewed(calls, a, lambda s: s.result is not None)
            await listed(calls, b)
        # No worker serves the parent: the client's approval goes as the signal, queued.
        queued = await calls.approve(b, approver="dora")
        assert queued.delivery is Delivery.QUEUED
        view = await calls.status(b)
        assert not view.live
        assert view.state.phase is Phase.AWAITING_APPROVAL
        # The parent's worker comes back, with no cache: it replays the parent and applies it.
        async with app_worker(client, queue, max_cached_workflows=0):
            output = await asyncio.wait_for(parent.result(), 30)
    first, second = output.results
    assert first.approval is not None
    assert first.approval.via == "signal"
    assert first.approval.approver == "ui"
    assert second.status is CallStatus.COMPLETED
    assert second.approval is not None
    assert (second.approval.approver, second.approval.via) == ("dora", "signal")
    assert CHILD_STARTED not in await history_types(parent)
    await replays(parent)


class EndingRoutes(InlineRoutes):
    """Inline routes for which the parent ends between its describe and the decision's signal."""

    async def _probe(self, ref: InlineRef, description: object) -> CallState | None:
        await ref.parent.terminate("ended while the decision was on its way")
        return None


async def test_a_decision_whose_parent_ends_on_the_way_is_rejected_not_raised(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    async with served_parent(client, task_queue, monkeypatch, calc("a")) as parent:
        a = f"{parent.id}/tools/a"
        await listed(calls, a)
        calls.inline = EndingRoutes(calls)
        outcome = await calls.approve(a, approver="dora")
    assert (outcome.delivery, outcome.reason) == (
        Delivery.REJECTED,
        "the call's parent workflow has ended",
    )
    assert (await parent.describe()).status is WorkflowExecutionStatus.TERMINATED


async def test_an_inline_approval_times_out_and_a_question_is_answered(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    ask = ToolCallRequest(
        tool="ask_user", arguments={"question": "Which branch?", "options": ["main"]}, call_id="q"
    )
    waits = {"approval_timeout": timedelta(seconds=1)}
    async with served_parent(client, task_queue, monkeypatch, calc("a"), ask, **waits) as parent:
        question = await listed(calls, f"{parent.id}/tools/q")
        assert question.question is not None
        assert question.question.options == ["main"]
        assert question.phase is Phase.AWAITING_ANSWER
        answered = await calls.answer(f"{parent.id}/tools/q", "main", responder="erin")
        assert answered.delivery is Delivery.ACCEPTED
        output = await asyncio.wait_for(parent.result(), 30)
    timed_out, asked = output.results
    assert timed_out.status is CallStatus.DENIED
    assert timed_out.error is not None
    assert timed_out.error.code is ErrorCode.APPROVAL_TIMED_OUT
    assert timed_out.approval is None
    assert asked.status is CallStatus.COMPLETED
    assert asked.output == {
        "request_id": question.question.request_id,
        "status": "answered",
        "answer": "main",
    }
    assert CHILD_STARTED not in await history_types(parent)
    assert MEMO_INLINE_PENDING not in await (await parent.describe()).memo()


async def test_an_approver_edits_an_inline_call_before_approving(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    async with served_parent(client, task_queue, monkeypatch, calc("a")) as parent:
        call = f"{parent.id}/tools/a"
        first = await listed(calls, call)
        outcome = await calls.approve(call, approver="alice", arguments={"expression": "2 ** 5"})
        assert outcome.delivery is Delivery.ACCEPTED, outcome.reason
        output = await asyncio.wait_for(parent.result(), 30)
    [result] = output.results
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "2 ** 5", "result": 32}
    assert first.approval is not None
    [edit] = result.edits
    assert edit.original_digest == first.approval.digest
    assert result.digest == edit.digest != first.approval.digest
    # The edit was planned again, inline: three activities (two plans, the tool), no child.
    events = await history_types(parent)
    assert events.count(ACTIVITY_SCHEDULED) == 3
    assert CHILD_STARTED not in events


async def test_calls_the_inline_path_cannot_carry_run_as_children(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    # The default ceiling holds writes for approval: the deployment's own workflow waits for it.
    async with (
        running_worker(client, inline_config(task_queue, monkeypatch)) as probes,
        app_worker(client) as queue,
    ):
        parent = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=[[write("w")]], inline=True)
        )
        child = f"{parent.id}/tools/w"
        pending = await listed(calls, child)
        assert pending.parent_id == parent.id
        assert not pending.inline  # a call of its own
        assert (await calls.approve(child, approver="alice")).delivery is Delivery.ACCEPTED
        output = await asyncio.wait_for(parent.result(), 30)
    [result] = output.results
    assert result.status is CallStatus.COMPLETED
    assert result.workflow_id == child
    assert probes.runs == {"probe_write": 1}
    assert (await history_types(parent)).count(CHILD_STARTED) == 1

    # A deployment that names no keys attests with the one it keeps in its state directory.
    echo = ToolCallRequest(tool="probe_echo", arguments={"text": "hi"}, call_id="e")
    state = tmp_path / "state"
    config = make_config(task_queue, state_dir=str(state))
    async with running_worker(client, config), app_worker(client) as queue:
        parent = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=[[echo]], inline=True)
        )
        output = await asyncio.wait_for(parent.result(), 30)
    [result] = output.results
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"text": "hi"}
    assert (await history_types(parent)).count(CHILD_STARTED) == 0
    assert (state / "attestation.keys").stat().st_mode & 0o777 == 0o600


async def test_an_inline_call_takes_a_response_in_place_of_the_tool(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the parent's handlers: by update with a worker, queued as the deny signal without
    one; the tool never runs and the parent's history replays."""
    calls = ToolCallClient(client, task_queue=task_queue)
    config = inline_config(task_queue, monkeypatch, ceiling=ALLOW_ALL)
    batch = [write("a", "ta"), write("b", "tb")]
    async with running_worker(client, config) as probes:
        async with app_worker(client) as queue:
            parent = await start_parent(
                client,
                queue,
                ParentInput(
                    task_queue=task_queue, batches=[batch], policy=NEEDS_APPROVAL, inline=True
                ),
            )
            a, b = (f"{parent.id}/tools/{c}" for c in "ab")
            await listed(calls, a)
            await listed(calls, b)
            live = await calls.respond(a, "Already written.", responder="alice")
            assert live.delivery is Delivery.ACCEPTED
        queued = await calls.respond(b, "Not needed.", responder="bob")
        assert queued.delivery is Delivery.QUEUED
        async with app_worker(client, queue, max_cached_workflows=0):
            output = await asyncio.wait_for(parent.result(), 30)
    first, second = output.results
    for result, text, via in (
        (first, "Already written.", "update"),
        (second, "Not needed.", "signal"),
    ):
        assert result.status is CallStatus.DENIED
        assert result.error is not None
        assert result.error.code is ErrorCode.RESPONDED
        assert result.response == text
        assert result.approval is not None
        assert result.approval.via == via
    assert probes.runs == {}
    await replays(parent)
