"""Record parent-workflow histories that ``ToolCalls`` must keep replaying.

    python -m tests.record_parent_histories [NAME ...]

Each scenario runs ``AgentParent`` (``tests/support/parents.py``) against a real worker on a fresh
dev server and writes its history to ``tests/histories/parents/<name>.json``;
``tests/workflows/test_parent.py`` replays every file there. The files in the repository were
recorded before ``ToolCalls`` charged budgets in request order and joined repeated call ids, so
they show that parents already running keep replaying (the changes are behind
``workflow.patched``); ``inline_calls`` was recorded when inline calls came. Record new files
under new names; never overwrite the old ones.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.support.harness import make_config, running_worker
from tests.support.inline import KEYS_ENV
from tests.support.parents import AgentParent, ParentInput, ParentOutput
from tests.support.payloads import keys
from tests.support.plans import ReversedPlans
from toolcalls.worker.devserver import temporal_binary
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.call import (
    SEARCH_ATTRIBUTES,
    CapabilityPolicy,
    Effect,
    ToolCallRequest,
)
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.reach.parent import CallBudget

PARENT_HISTORIES = Path(__file__).parent / "histories" / "parents"

ParentHandle = WorkflowHandle[AgentParent, ParentOutput]
Scenario = Callable[[Client, str, str], Awaitable[ParentHandle]]


def _calc(call_id: str, expression: str = "6 * 7") -> ToolCallRequest:
    return ToolCallRequest(tool="calculator", arguments={"expression": expression}, call_id=call_id)


def recorded_id(name: str) -> str:
    """The workflow id a scenario's parent runs under (its children's ids are built from it)."""
    return f"recorded-{name}"


async def _parent(client: Client, queue: str, name: str, input: ParentInput) -> ParentHandle:
    handle = await client.start_workflow(
        AgentParent.run, input, id=recorded_id(name), task_queue=queue
    )
    await asyncio.wait_for(handle.result(), 60)
    return handle


async def budget_plans_reversed(client: Client, queue: str, deployment: str) -> ParentHandle:
    """Three writes under a one-write budget, their plans answered last request first."""
    config = make_config(deployment, worker={"serve_tools": False})
    plans = ReversedPlans(client, config, batch=3, order=lambda plan: plan.arguments["token"])
    batch = [
        ToolCallRequest(tool="probe_write", arguments={"token": f"t{i}"}, call_id=f"w{i}")
        for i in (1, 2, 3)
    ]
    async with (
        running_worker(client, config),
        Worker(client, task_queue=deployment, activities=[plans.plan]),
    ):
        return await _parent(
            client,
            queue,
            "budget_plans_reversed",
            ParentInput(
                task_queue=deployment,
                batches=[batch],
                budget=CallBudget(per_capability={"filesystem.write": 1}),
                policy=CapabilityPolicy(rules={"filesystem.write": Effect.DENY}),
            ),
        )


async def repeated_call_id(client: Client, queue: str, deployment: str) -> ParentHandle:
    """One call id made again: with other arguments, then twice in parallel with the same."""
    batches = [[_calc("same")], [_calc("same", "2")], [_calc("same"), _calc("same")]]
    async with running_worker(client, make_config(deployment)):
        input = ParentInput(task_queue=deployment, batches=batches)
        return await _parent(client, queue, "repeated_call_id", input)


async def inline_calls(client: Client, queue: str, deployment: str) -> ParentHandle:
    """Inline calls: one its plan ran, a write approved by update and run with its attestation,
    one denied, one the ceiling sent to a child."""
    os.environ[KEYS_ENV] = keys("i1")
    config = make_config(
        deployment,
        ceiling={"default_effect": "allow", "rules": {"process.execute": "require_approval"}},
        inline={"keys_env": KEYS_ENV},
    )
    policy = CapabilityPolicy(rules={"filesystem.write": Effect.REQUIRE_APPROVAL})
    batches = [
        [_calc("a")],
        [
            ToolCallRequest(tool="probe_write", arguments={"token": "w"}, call_id="w"),
            ToolCallRequest(tool="probe_write", arguments={"token": "d"}, call_id="d"),
            ToolCallRequest(tool="probe_sleep", arguments={"seconds": 0}, call_id="s"),
        ],
    ]
    calls = ToolCallClient(client, task_queue=deployment)
    name = "inline_calls"
    async with running_worker(client, config):
        handle = await client.start_workflow(
            AgentParent.run,
            ParentInput(task_queue=deployment, batches=batches, policy=policy, inline=True),
            id=recorded_id(name),
            task_queue=queue,
        )
        for call_id in ("w", "d", "s"):
            await _waiting(calls, f"{handle.id}/tools/{call_id}")
        assert (await calls.approve(f"{handle.id}/tools/w", approver="alice")).ok
        assert (await calls.deny(f"{handle.id}/tools/d", approver="bob")).ok
        assert (await calls.approve(f"{handle.id}/tools/s", approver="carol")).ok
        await asyncio.wait_for(handle.result(), 60)
    return handle


async def _waiting(calls: ToolCallClient, workflow_id: str) -> None:
    for _ in range(200):
        if any(call.workflow_id == workflow_id for call in await calls.pending()):
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{workflow_id} never waited for approval")


SCENARIOS: dict[str, Scenario] = {
    "budget_plans_reversed": budget_plans_reversed,
    "repeated_call_id": repeated_call_id,
    "inline_calls": inline_calls,
}


async def record(names: list[str]) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
    )
    PARENT_HISTORIES.mkdir(parents=True, exist_ok=True)
    taken = [name for name in names if (PARENT_HISTORIES / f"{name}.json").exists()]
    if taken:
        await env.shutdown()
        raise SystemExit(f"already recorded (keep them; record under new names): {taken}")
    try:
        for name in names:
            queue = f"record-app-{uuid.uuid4()}"
            async with Worker(
                env.client,
                task_queue=queue,
                workflows=[AgentParent],
                workflow_runner=sandbox_runner(),
            ):
                handle = await SCENARIOS[name](env.client, queue, f"record-{uuid.uuid4()}")
            history = await handle.fetch_history()
            path = PARENT_HISTORIES / f"{name}.json"
            path.write_text(history.to_json() + "\n", encoding="utf-8")
            print(f"{name}: {len(history.events)} events", flush=True)
    finally:
        await env.shutdown()


def main() -> None:
    names = sys.argv[1:] or list(SCENARIOS)
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        print(f"unknown scenarios: {', '.join(unknown)}", file=sys.stderr)
        os._exit(2)
    asyncio.run(record(names))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
