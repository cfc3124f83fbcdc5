"""Inline calls and the rest of ``ToolCalls`` and ``ToolCallClient``: budgets charged in request
order, the parent's memo kept within bounds, counts in ``pending_page``, ``status`` without a
worker, and an id that names no call."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from tests.support.harness import (
    history_types,
    make_config,
    pending_approval,
    running_worker,
    start_call,
)
from tests.support.http_servers import serve, text
from tests.support.inline import app_worker, inline_config, listed, start_parent
from tests.support.parents import ParentInput
from tests.support.plans import ReversedPlans
from toolcalls.workflows.call.inline import NO_GRANTS
from toolcalls.workflows.models.approval import GrantTerms
from toolcalls.workflows.models.call import (
    SEARCH_INLINE_WAITING,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    Phase,
    ToolCallRequest,
)
from toolcalls.workflows.reach.client import CallNotFound, Delivery, ToolCallClient
from toolcalls.workflows.reach.inline_host import MAX_MEMO_BYTES
from toolcalls.workflows.reach.parent import CallBudget

CHILD_STARTED = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
ALLOW_ALL = {"default_effect": "allow"}
ECHO_NEEDS_APPROVAL = CapabilityPolicy(
    tools={"probe_echo": Effect.REQUIRE_APPROVAL, "calculator": Effect.REQUIRE_APPROVAL}
)


def write(call_id: str, token: str) -> ToolCallRequest:
    return ToolCallRequest(tool="probe_write", arguments={"token": token}, call_id=call_id)


async def test_a_per_capability_budget_is_charged_before_an_inline_tool_runs(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = inline_config(task_queue, monkeypatch, ceiling=ALLOW_ALL)
    batch = [write(f"w{i}", f"t{i}") for i in (1, 2, 3)]
    budget = CallBudget(per_capability={"filesystem.write": 2})
    async with running_worker(client, config) as probes, app_worker(client) as queue:
        parent = await start_parent(
            client,
            queue,
            ParentInput(task_queue=task_queue, batches=[batch], budget=budget, inline=True),
        )
        output = await asyncio.wait_for(parent.result(), 30)
    assert [r.status for r in output.results] == [CallStatus.COMPLETED] * 2 + [CallStatus.DENIED]
    over = output.results[2].error
    assert over is not None
    assert over.code is ErrorCode.BUDGET_EXCEEDED
    assert over.message == "the budget allows 2 calls needing filesystem.write"
    assert probes.runs == {"probe_write": 2}
    assert output.usage.per_capability == {"filesystem.write": 2}
    assert CHILD_STARTED not in await history_types(parent)


async def test_inline_plans_are_charged_in_request_order(client: Client, task_queue: str) -> None:
    # As for children: the plans come back last request first, and the first request still gets
    # the one write the budget allows (every write is then denied by the policy, inline).
    config = make_config(task_queue, worker={"serve_tools": False})
    plans = ReversedPlans(client, config, batch=3, order=lambda plan: plan.arguments["token"])
    policy = CapabilityPolicy(rules={"filesystem.write": Effect.DENY})
    budget = CallBudget(per_capability={"filesystem.write": 1})
    async with (
        running_worker(client, config),
        app_worker(client) as queue,
        Worker(client, task_queue=task_queue, activities=[plans.plan]),
    ):
        batch = [write(f"w{i}", f"t{i}") for i in (1, 2, 3)]
        parent = await start_parent(
            client,
            queue,
            ParentInput(
                task_queue=task_queue, batches=[batch], budget=budget, policy=policy, inline=True
            ),
        )
        output = await asyncio.wait_for(parent.result(), 30)
    assert plans.answered == ["t3", "t2", "t1"]
    codes = [r.error.code if r.error else None for r in output.results]
    assert codes == [ErrorCode.POLICY_DENIED, ErrorCode.BUDGET_EXCEEDED, ErrorCode.BUDGET_EXCEEDED]
    assert CHILD_STARTED not in await history_types(parent)


async def test_a_request_too_large_for_the_memo_is_listed_without_it(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    big = ToolCallRequest(
        tool="probe_echo", arguments={"text": "x" * (MAX_MEMO_BYTES + 1)}, call_id="big"
    )
    small = ToolCallRequest(tool="calculator", arguments={"expression": "1 + 2"}, call_id="small")
    async with (
        running_worker(client, inline_config(task_queue, monkeypatch)),
        app_worker(client) as queue,
    ):
        parent = await start_parent(
            client,
            queue,
            ParentInput(
                task_queue=task_queue,
                batches=[[small, big]],
                policy=ECHO_NEEDS_APPROVAL,
                inline=True,
            ),
        )
        listed_small = await listed(calls, f"{parent.id}/tools/small")
        listed_big = await listed(calls, f"{parent.id}/tools/big")
        assert listed_small.approval is not None
        assert listed_big.approval is None
        assert listed_big.question is None
        assert listed_big.phase is Phase.AWAITING_APPROVAL
        assert listed_big.tool == "probe_echo"
        description = await parent.describe()
        assert description.typed_search_attributes.get(SEARCH_INLINE_WAITING) == 2
        # With a worker serving the parent, the request comes from the call itself.
        request = await calls.pending_approval(f"{parent.id}/tools/big")
        assert request.arguments["text"] == big.arguments["text"]
        for call_id in ("small", "big"):
            outcome = await calls.approve(f"{parent.id}/tools/{call_id}", approver="alice")
            assert outcome.delivery is Delivery.ACCEPTED
        output = await asyncio.wait_for(parent.result(), 30)
    assert [r.status for r in output.results] == [CallStatus.COMPLETED] * 2
    assert output.results[1].output == {"text": big.arguments["text"]}


async def test_pending_counts_inline_calls_and_status_needs_no_worker(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    batch = [
        ToolCallRequest(tool="calculator", arguments={"expression": f"{n} + 1"}, call_id=f"c{n}")
        for n in range(2)
    ]
    async with running_worker(client, inline_config(task_queue, monkeypatch)) as probes:
        before = (await calls.pending_page()).total
        own = await start_call(client, task_queue, "probe_write", {"token": "own"})
        await pending_approval(own)
        async with app_worker(client) as queue:
            parent = await start_parent(
                client,
                queue,
                ParentInput(
                    task_queue=task_queue,
                    batches=[batch],
                    policy=ECHO_NEEDS_APPROVAL,
                    inline=True,
                ),
            )
            ids = [f"{parent.id}/tools/c{n}" for n in range(2)]
            for workflow_id in ids:
                await listed(calls, workflow_id)
            assert await _total(calls) == before + 3
            with pytest.raises(CallNotFound, match="has made no inline call 'nope'"):
                await calls.status(f"{parent.id}/tools/nope")
        # The parent's worker is gone: status and the listing come from the memo.
        view = await calls.status(ids[0])
        assert not view.live
        assert view.running
        assert view.state.phase is Phase.AWAITING_APPROVAL
        assert view.state.pending_approval is not None
        assert view.state.pending_approval.arguments == {"expression": "0 + 1"}
        with pytest.raises(CallNotFound, match="not waiting for a human, and no worker serves"):
            await calls.status(f"{parent.id}/tools/nope")
        with pytest.raises(CallNotFound, match="no call or parent workflow has this id"):
            await calls.status("no-such-parent/tools/c0")
        await parent.terminate("test over")
        await own.terminate("test over")
    assert probes.runs == {}


async def _total(calls: ToolCallClient, timeout: float = 20) -> int:
    """``pending_page``'s total once visibility has caught up with the last change."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last = -1
    while loop.time() < deadline:
        total = (await calls.pending_page()).total
        if total == last:
            return total
        last = total
        await asyncio.sleep(0.5)
    return last


async def test_inline_approvals_keep_the_approvers_rules(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    config = inline_config(
        task_queue,
        monkeypatch,
        approvers={
            "rules": {"calculator": {"approvers": ["alice", "carol"], "min_approvals": 2}},
            "max_grant_seconds": 3600,
        },
    )
    async with running_worker(client, config), app_worker(client) as queue:
        parent = await start_parent(
            client,
            queue,
            ParentInput(
                task_queue=task_queue,
                batches=[
                    [ToolCallRequest(tool="calculator", arguments={"expression": "3"}, call_id="a")]
                ],
                policy=ECHO_NEEDS_APPROVAL,
                inline=True,
            ),
        )
        call = f"{parent.id}/tools/a"
        waiting = await listed(calls, call)
        assert waiting.inline
        assert waiting.approval is not None
        assert waiting.approval.approvers == ["alice", "carol"]
        assert waiting.approval.max_grant is None  # no standing grants inline
        by_bob = await calls.approve(call, approver="bob")
        remembered = await calls.approve(
            call, approver="alice", remember=GrantTerms(duration=timedelta(hours=1))
        )
        by_alice = await calls.approve(call, approver="alice")
        # One of two approvals: the parent's memo shows it, as a child's would.
        for _ in range(100):
            listed_now = await calls.pending_approval(call)
            if listed_now.approved_by:
                break
            await asyncio.sleep(0.1)
        assert listed_now.approved_by == ["alice"]
        by_carol = await calls.approve(call, approver="carol")
        output = await asyncio.wait_for(parent.result(), 30)
    assert by_bob.delivery is Delivery.REJECTED
    assert by_bob.reason is not None
    assert "'bob' may not decide" in by_bob.reason
    assert remembered.delivery is Delivery.REJECTED
    assert remembered.reason == NO_GRANTS
    assert by_alice.delivery is Delivery.ACCEPTED
    assert by_carol.delivery is Delivery.ACCEPTED
    [result] = output.results
    assert result.status is CallStatus.COMPLETED
    assert [record.approver for record in result.approvals] == ["alice", "carol"]
    assert (await history_types(parent)).count(CHILD_STARTED) == 0


async def test_an_inline_call_whose_wait_notifies_runs_as_a_child(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only ToolCallWorkflow's notifications are attested: a wait the deployment's webhooks are
    # told of is its own, so the parent hands the call to a child.
    calls = ToolCallClient(client, task_queue=task_queue)
    with serve({"/hook": text("ok")}) as server:
        config = inline_config(
            task_queue,
            monkeypatch,
            notifications={
                "webhooks": [
                    {"name": "ops", "url": server.url("/hook"), "allow_private_address": True}
                ]
            },
        )
        async with running_worker(client, config), app_worker(client) as queue:
            request = ToolCallRequest(tool="calculator", arguments={"expression": "3"}, call_id="a")
            parent = await start_parent(
                client,
                queue,
                ParentInput(
                    task_queue=task_queue,
                    batches=[[request]],
                    policy=ECHO_NEEDS_APPROVAL,
                    inline=True,
                ),
            )
            call = f"{parent.id}/tools/a"
            waiting = await listed(calls, call)
            assert not waiting.inline  # a call of its own
            assert (await calls.approve(call, approver="alice")).delivery is Delivery.ACCEPTED
            output = await asyncio.wait_for(parent.result(), 30)
            for _ in range(100):  # the notification runs beside the wait
                if server.requests:
                    break
                await asyncio.sleep(0.05)
    [result] = output.results
    assert result.status is CallStatus.COMPLETED
    assert result.workflow_id == call
    assert (await history_types(parent)).count(CHILD_STARTED) == 1
    [posted] = [json.loads(seen.body) for seen in server.requests]
    assert (posted["event"], posted["workflow_id"], posted["call_id"]) == ("waiting", call, "a")
