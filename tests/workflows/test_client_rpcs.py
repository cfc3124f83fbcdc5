"""What a decision asks the server: one description of the call, and the task queue's pollers
only while no recent answer says a worker serves it."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.client import listed_pending, write_request
from tests.support.harness import make_config, running_worker
from toolcalls.workflows.models.call import CallStatus
from toolcalls.workflows.reach import serving
from toolcalls.workflows.reach.client import Delivery, ToolCallClient

COUNTED = ("describe_workflow_execution", "describe_task_queue")


def count_rpcs(tools: ToolCallClient, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the client's calls of the ``COUNTED`` RPCs from now on."""
    counts: Counter[str] = Counter()
    service = tools.client.workflow_service
    for name in COUNTED:
        original = getattr(service, name)

        async def counted(*args: Any, _name: str = name, _rpc: Any = original, **kw: Any) -> Any:
            counts[_name] += 1
            return await _rpc(*args, **kw)

        monkeypatch.setattr(service, name, counted)
    return counts


async def test_approve_and_deny_describe_the_call_once_and_ask_for_the_worker_once(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, make_config(task_queue)):
        calls = [await tools.start(write_request(name)) for name in ("p", "q", "r")]
        await listed_pending(tools, *(call.id for call in calls))
        counts = count_rpcs(tools, monkeypatch)
        first = await tools.approve(calls[0].id, approver="alice")
        assert counts == {"describe_workflow_execution": 1, "describe_task_queue": 1}
        others = [
            await tools.approve(calls[1].id, approver="alice"),
            await tools.deny(calls[2].id, approver="bob"),
        ]
        results = await asyncio.wait_for(asyncio.gather(*(call.result() for call in calls)), 30)
    # The worker found serving the queue is trusted for the next decisions.
    assert counts == {"describe_workflow_execution": 3, "describe_task_queue": 1}
    assert [o.delivery for o in (first, *others)] == [Delivery.ACCEPTED] * 3
    assert [r.status for r in results] == [
        CallStatus.COMPLETED,
        CallStatus.COMPLETED,
        CallStatus.DENIED,
    ]


async def test_a_remembered_worker_is_asked_about_again_once_the_memory_lapses(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serving, "SERVING_REMEMBERED", 0.5)
    tools = ToolCallClient(client, task_queue=task_queue)
    assert not await tools.worker_serving(task_queue)  # no worker: not remembered
    async with running_worker(client, make_config(task_queue)):
        counts = count_rpcs(tools, monkeypatch)
        async with asyncio.timeout(10):  # until the new worker's first poll reaches the server
            while not await tools.worker_serving(task_queue):
                await asyncio.sleep(0.05)
        asked = counts["describe_task_queue"]
        assert await tools.worker_serving(task_queue)
        assert counts["describe_task_queue"] == asked
        await asyncio.sleep(0.6)
        assert await tools.worker_serving(task_queue)
        assert counts["describe_task_queue"] == asked + 1
