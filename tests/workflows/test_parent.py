"""``ToolCalls`` from a real parent workflow: children, parallel calls, a shared budget, replay.

Also: a call id runs one call, requests too large for Temporal are refused, and per-capability
budgets are charged in the order of the requests.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker

from tests.record_parent_histories import PARENT_HISTORIES, recorded_id
from tests.support.harness import history_types, make_config, running_worker, wait_for
from tests.support.parents import (
    AgentParent,
    OversizedInput,
    OversizedParent,
    ParentInput,
    ParentOutput,
)
from tests.support.plans import ReversedPlans
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    Phase,
    ToolCallRequest,
)
from toolcalls.workflows.models.limits import CODEC_MARGIN_BYTES, PAYLOAD_LIMIT_BYTES
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.reach.parent import REQUEST_LIMIT_BYTES, CallBudget

CHILD_STARTED = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED

ParentHandle = WorkflowHandle[AgentParent, ParentOutput]


@asynccontextmanager
async def parent_worker(client: Client) -> AsyncIterator[str]:
    """The application's own worker, on its own queue, running the parent workflow."""
    queue = f"app-{uuid.uuid4()}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[AgentParent, OversizedParent],
        workflow_runner=sandbox_runner(),
    ):
        yield queue


async def start_parent(client: Client, queue: str, input: ParentInput) -> ParentHandle:
    return await client.start_workflow(
        AgentParent.run, input, id=f"parent-{uuid.uuid4()}", task_queue=queue
    )


def calc(call_id: str, expression: str = "6 * 7") -> ToolCallRequest:
    return ToolCallRequest(tool="calculator", arguments={"expression": expression}, call_id=call_id)


def write(call_id: str, token: str = "t") -> ToolCallRequest:
    return ToolCallRequest(tool="probe_write", arguments={"token": token}, call_id=call_id)


async def test_three_parallel_calls_one_approved(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue)
    batch = [calc("a"), write("b"), ToolCallRequest(tool="current_datetime", call_id="c")]
    async with running_worker(client, make_config(task_queue)), parent_worker(client) as queue:
        parent = await start_parent(
            client,
            queue,
            ParentInput(task_queue=task_queue, batches=[batch], budget=CallBudget(max_calls=3)),
        )
        child = f"{parent.id}/tools/b"
        await wait_for(tools.handle(child), lambda s: s.phase is Phase.AWAITING_APPROVAL)
        outcome = await tools.approve(child, approver="alice")
        assert outcome.ok
        output = await asyncio.wait_for(parent.result(), 30)

    assert [r.call_id for r in output.results] == ["a", "b", "c"]
    assert [r.workflow_id for r in output.results] == [f"{parent.id}/tools/{c}" for c in "abc"]
    assert [r.status for r in output.results] == [CallStatus.COMPLETED] * 3
    assert output.results[0].output == {"expression": "6 * 7", "result": 42}
    approval = output.results[1].approval
    assert approval is not None
    assert approval.approver == "alice"
    assert output.usage.calls == 3
    assert (await history_types(parent)).count(CHILD_STARTED) == 3

    # The parent's history replays against today's helper (in the sandbox, like production).
    history = await parent.fetch_history()
    replay = await Replayer(
        workflows=[AgentParent],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    ).replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None


async def test_budget_runs_out_without_starting_children(client: Client, task_queue: str) -> None:
    batches = [[calc("a"), calc("b")], [calc("c")], [calc("d")]]
    async with running_worker(client, make_config(task_queue)), parent_worker(client) as queue:
        parent = await start_parent(
            client,
            queue,
            ParentInput(task_queue=task_queue, batches=batches, budget=CallBudget(max_calls=3)),
        )
        output = await asyncio.wait_for(parent.result(), 30)
    statuses = [r.status for r in output.results]
    assert statuses == [CallStatus.COMPLETED] * 3 + [CallStatus.DENIED]
    denied = output.results[3]
    assert denied.error is not None
    assert denied.error.code is ErrorCode.BUDGET_EXCEEDED
    assert "3 calls" in denied.error.message
    assert denied.workflow_id == f"{parent.id}/tools/d"
    assert (await history_types(parent)).count(CHILD_STARTED) == 3


async def test_per_capability_budget_plans_before_starting(client: Client, task_queue: str) -> None:
    batches = [
        [write("w1", "one")],
        [write("w2", "two"), calc("c1")],
        [ToolCallRequest(tool="no_such_tool", call_id="x")],
    ]
    budget = CallBudget(per_capability={"filesystem.*": 1})
    config = make_config(task_queue, ceiling={"default_effect": "allow"})
    async with running_worker(client, config) as probes, parent_worker(client) as queue:
        parent = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=batches, budget=budget)
        )
        output = await asyncio.wait_for(parent.result(), 30)
    first, second, arithmetic, unknown = output.results
    assert first.status is CallStatus.COMPLETED
    assert second.status is CallStatus.DENIED
    assert second.error is not None
    assert second.error.code is ErrorCode.BUDGET_EXCEEDED
    assert "filesystem.*" in second.error.message
    assert arithmetic.status is CallStatus.COMPLETED
    assert unknown.status is CallStatus.FAILED
    assert unknown.error is not None
    assert unknown.error.code is ErrorCode.UNKNOWN_TOOL
    assert probes.runs == {"probe_write": 1}
    assert output.usage.per_capability == {"filesystem.*": 1}
    # Only the first write and the arithmetic reached a child.
    assert (await history_types(parent)).count(CHILD_STARTED) == 2


async def test_budget_deadline_passed_and_bounding(client: Client, task_queue: str) -> None:
    past = CallBudget(deadline=datetime(2020, 1, 1, tzinfo=UTC))
    async with running_worker(client, make_config(task_queue)), parent_worker(client) as queue:
        parent = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=[[calc("a")]], budget=past)
        )
        output = await asyncio.wait_for(parent.result(), 30)
        [result] = output.results
        assert result.status is CallStatus.DENIED
        assert result.error is not None
        assert result.error.code is ErrorCode.BUDGET_EXCEEDED
        assert (await history_types(parent)).count(CHILD_STARTED) == 0

        # A budget deadline bounds each call's own wait for approval.
        soon = CallBudget(deadline=datetime.now(UTC) + timedelta(seconds=2))
        parent = await start_parent(
            client,
            queue,
            ParentInput(task_queue=task_queue, batches=[[write("w")]], budget=soon),
        )
        output = await asyncio.wait_for(parent.result(), 30)
    [result] = output.results
    assert result.status is CallStatus.TIMED_OUT
    assert result.error is not None
    assert result.error.code is ErrorCode.BUDGET_EXCEEDED


async def test_defaults_apply_to_every_call(client: Client, task_queue: str) -> None:
    needs_approval = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})
    own = ToolCallRequest(
        tool="calculator",
        arguments={"expression": "1"},
        call_id="own",
        policy=CapabilityPolicy(),
    )
    async with running_worker(client, make_config(task_queue)), parent_worker(client) as queue:
        parent = await start_parent(
            client,
            queue,
            ParentInput(
                task_queue=task_queue,
                batches=[[calc("a"), own]],
                policy=needs_approval,
                approval_timeout=timedelta(seconds=1),
            ),
        )
        output = await asyncio.wait_for(parent.result(), 30)
    defaulted, overridden = output.results
    assert defaulted.status is CallStatus.DENIED
    assert defaulted.error is not None
    assert defaulted.error.code is ErrorCode.APPROVAL_TIMED_OUT
    assert overridden.status is CallStatus.COMPLETED


async def test_a_call_id_starts_one_child_only(client: Client, task_queue: str) -> None:
    batches = [[calc("same")], [calc("same", "2")], [calc("same"), calc("same")]]
    async with running_worker(client, make_config(task_queue)), parent_worker(client) as queue:
        parent = await start_parent(
            client, queue, ParentInput(task_queue=task_queue, batches=batches)
        )
        output = await asyncio.wait_for(parent.result(), 30)
    first, other, *repeats = output.results
    assert first.status is CallStatus.COMPLETED
    # The same id for another call is refused; the same call again gets the first one's result.
    assert other.status is CallStatus.FAILED
    assert other.error is not None
    assert other.error.code is ErrorCode.PRECONDITION_FAILED
    assert "already made with another tool or other arguments" in other.error.message
    assert repeats == [first, first]
    assert (await history_types(parent)).count(CHILD_STARTED) == 1
    assert output.usage.calls == 1

    history = await parent.fetch_history()
    replay = await Replayer(
        workflows=[AgentParent],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    ).replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None


async def test_closing_parent_cancels_pending_calls(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, make_config(task_queue)) as probes:
        async with parent_worker(client) as queue:
            parent = await start_parent(
                client, queue, ParentInput(task_queue=task_queue, batches=[[write("w")]])
            )
            child = tools.handle(f"{parent.id}/tools/w")
            await wait_for(child, lambda s: s.phase is Phase.AWAITING_APPROVAL)
            await parent.terminate("the agent run was abandoned")
        result = await asyncio.wait_for(child.result(), 30)
    assert result.status is CallStatus.CANCELED
    assert probes.runs == {}


async def test_a_request_too_large_for_temporal_is_refused_before_it_starts(
    client: Client, task_queue: str
) -> None:
    async with (
        running_worker(client, make_config(task_queue)) as probes,
        parent_worker(client) as queue,
    ):
        parent = await client.start_workflow(
            OversizedParent.run,
            OversizedInput(task_queue=task_queue, size=3 * 1024 * 1024),
            id=f"parent-{uuid.uuid4()}",
            task_queue=queue,
        )
        big, small = await asyncio.wait_for(parent.result(), 30)
    assert REQUEST_LIMIT_BYTES == PAYLOAD_LIMIT_BYTES - CODEC_MARGIN_BYTES
    assert big.status is CallStatus.FAILED
    assert big.error is not None
    assert big.error.code is ErrorCode.INVALID_ARGUMENTS
    assert big.error.fixable_args == ["text"]
    assert big.error.message.startswith("probe_echo: the request is ")
    assert f"the limit is {REQUEST_LIMIT_BYTES} bytes" in big.error.message
    assert "shrink 'text' (" in big.error.message
    assert big.workflow_id == f"{parent.id}/tools/big"
    # Nothing started for it: no plan, no child; the parent went on to its next call.
    assert small.status is CallStatus.COMPLETED
    assert probes.runs == {"probe_echo": 1}
    assert (await history_types(parent)).count(CHILD_STARTED) == 1


async def test_per_capability_budget_is_charged_in_request_order(
    client: Client, task_queue: str
) -> None:
    # The budget allows one write; every started write is denied by the policy, so it ends at
    # once. The plans come back last request first, every time.
    config = make_config(task_queue, worker={"serve_tools": False})
    plans = ReversedPlans(client, config, batch=3, order=lambda plan: plan.arguments["token"])
    policy = CapabilityPolicy(rules={"filesystem.write": Effect.DENY})
    budget = CallBudget(per_capability={"filesystem.write": 1})
    outcomes = []
    async with (
        running_worker(client, config),
        parent_worker(client) as queue,
        Worker(client, task_queue=task_queue, activities=[plans.plan]),
    ):
        for _ in range(3):
            batch = [write(f"w{i}", f"t{i}") for i in (1, 2, 3)]
            parent = await start_parent(
                client,
                queue,
                ParentInput(task_queue=task_queue, batches=[batch], budget=budget, policy=policy),
            )
            output = await asyncio.wait_for(parent.result(), 30)
            outcomes.append([r.error.code if r.error else None for r in output.results])
            assert (await history_types(parent)).count(CHILD_STARTED) == 1
    assert plans.answered == ["t3", "t2", "t1"] * 3
    # The first request got the budget each time, though its plan came back last.
    assert (
        outcomes
        == [[ErrorCode.POLICY_DENIED, ErrorCode.BUDGET_EXCEEDED, ErrorCode.BUDGET_EXCEEDED]] * 3
    )


@pytest.mark.parametrize(
    "path", sorted(PARENT_HISTORIES.glob("*.json")), ids=lambda path: path.stem
)
async def test_parents_recorded_before_the_changes_still_replay(path: Path) -> None:
    # Recorded when plans were charged as they came back and a repeated id started a child again.
    text = await asyncio.to_thread(path.read_text, encoding="utf-8")
    history = WorkflowHistory.from_json(recorded_id(path.stem), text)
    replay = await Replayer(
        workflows=[AgentParent],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    ).replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None
