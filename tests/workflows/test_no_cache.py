"""A worker without a workflow cache (``max_cached_workflows = 0``) finishes calls started
together.

Without a cache the SDK keeps one run in memory; a workflow task for another run arriving while a
call's ``plan`` local activity ran made it evict that run and cancel the activity, so the task
timed out and the race repeated on every retry; the worker now takes one workflow task at a time
(``toolcalls.worker.plugin.UNCACHED_WORKFLOW_TASKS``).
"""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.harness import history_types, make_config, running_worker, start_call
from toolcalls.workflows.models.call import CallStatus

CALLS = 16
"""Enough calls at once that, without the fix, most of them never finish (8-11 of 16 here)."""

TIMED_OUT = EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT


@pytest.mark.parametrize("isolate", [True, False], ids=["sandboxed", "on-the-loop"])
async def test_calls_started_together_finish_on_a_worker_without_a_cache(
    client: Client, task_queue: str, isolate: bool
) -> None:
    handles = await asyncio.gather(
        *(start_call(client, task_queue, "probe_echo", {"text": str(n)}) for n in range(CALLS))
    )
    config = make_config(
        task_queue,
        ceiling={"default_effect": "allow"},
        worker={"max_cached_workflows": 0, "isolate_workflows": isolate},
    )
    async with running_worker(client, config) as probes:
        # A stuck call's task times out after 10 s and is retried with the same race, forever.
        results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 15)
    assert [r.status for r in results] == [CallStatus.COMPLETED] * CALLS
    assert sorted(r.output["text"] for r in results if r.output) == sorted(map(str, range(CALLS)))
    assert probes.runs == {"probe_echo": CALLS}
    # Every workflow task was completed by the worker that took it.
    for handle in handles:
        assert TIMED_OUT not in await history_types(handle)
