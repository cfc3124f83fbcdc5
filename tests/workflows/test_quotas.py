"""``[[quotas]]`` against a real server and worker: the limit, the sliding window, reservations
given back by calls that never ran, the ledger continuing as new, and the configuration."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
)
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.workflows.call.ledger import QuotaLedgerWorkflow
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, ToolCallResult
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.quota import Held, LedgerState

ALLOW = {"default_effect": "allow"}


def quota(name: str, limit: int, window: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "limit": limit, "window": window, **more}


def someone() -> Principal:
    return Principal(id=f"user-{uuid.uuid4().hex[:12]}")


async def calc(client: Client, queue: str, who: Principal | None) -> ToolCallResult:
    return await run_call(client, queue, "calculator", {"expression": "6*7"}, principal=who)


async def test_the_limit_holds_per_principal_and_the_window_slides(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, ceiling=ALLOW, quotas=[quota("sums", 2, "4s")])
    alice, bob = someone(), someone()
    async with running_worker(client, config):
        first = await calc(client, task_queue, alice)
        second = await calc(client, task_queue, alice)
        third = await calc(client, task_queue, alice)
        others = await calc(client, task_queue, bob)
        assert [first.status, second.status] == [CallStatus.COMPLETED, CallStatus.COMPLETED]
        assert first.output is not None
        assert first.output["result"] == 42
        assert third.status is CallStatus.DENIED
        assert third.error is not None
        assert third.error.code is ErrorCode.QUOTA_EXCEEDED
        assert f"quota sums exceeded: 2 of 2 per 4s used by {alice.id}" in third.error.message
        assert third.error.retryable
        assert third.error.retry_at is not None
        # Room comes back when the first reservation's window has passed, not before.
        assert first.started_at + timedelta(seconds=4) <= third.error.retry_at
        assert third.error.retry_at <= first.finished_at + timedelta(seconds=4)
        assert EventKind.QUOTA_EXCEEDED in [event.kind for event in third.events]
        assert EventKind.APPROVAL_REQUESTED not in [event.kind for event in third.events]
        assert others.status is CallStatus.COMPLETED  # bob's ledger is his own

        await asyncio.sleep(max(0.0, (third.error.retry_at - datetime.now(UTC)).total_seconds()))
        later = await calc(client, task_queue, alice)
        assert later.status is CallStatus.COMPLETED, later.error
    assert EventKind.QUOTA_RESERVED in [event.kind for event in later.events]


async def test_a_call_that_never_ran_gives_its_reservation_back(
    client: Client, task_queue: str
) -> None:
    """Denied, timed out, canceled: each waiting call held the one unit, and each gives it
    back, so the next call reserves it (and the call over quota is never asked about)."""
    config = make_config(task_queue, quotas=[quota("writes", 1, "1h", tools=["probe_write"])])
    alice = someone()
    async with running_worker(client, config) as probes:
        waiting = await start_call(
            client, task_queue, "probe_write", {"token": "a"}, principal=alice
        )
        pending = await pending_approval(waiting)
        over = await run_call(client, task_queue, "probe_write", {"token": "b"}, principal=alice)
        assert over.error is not None
        assert over.error.code is ErrorCode.QUOTA_EXCEEDED
        assert EventKind.APPROVAL_REQUESTED not in [event.kind for event in over.events]

        await waiting.execute_update(ToolCallWorkflow.decide, decision(pending, approved=False))
        assert (await waiting.result()).error.code is ErrorCode.APPROVAL_DENIED  # type: ignore[union-attr]

        timing_out = await run_call(
            client, task_queue, "probe_write", {"token": "c"}, principal=alice,
            approval_timeout=timedelta(seconds=1),
        )  # fmt: skip
        assert timing_out.error is not None
        assert timing_out.error.code is ErrorCode.APPROVAL_TIMED_OUT

        canceled = await start_call(
            client, task_queue, "probe_write", {"token": "d"}, principal=alice
        )
        await pending_approval(canceled)
        await canceled.cancel()
        assert (await canceled.result()).status is CallStatus.CANCELED

        last = await start_call(client, task_queue, "probe_write", {"token": "e"}, principal=alice)
        pending = await pending_approval(last)
        await last.execute_update(ToolCallWorkflow.decide, decision(pending))
        done = await last.result()
        assert done.status is CallStatus.COMPLETED
        # Executed: its unit stays spent.
        again = await run_call(client, task_queue, "probe_write", {"token": "f"}, principal=alice)
        assert again.error is not None
        assert again.error.code is ErrorCode.QUOTA_EXCEEDED
    assert probes.runs == {"probe_write": 1}


async def test_costs_a_capability_quota_and_a_call_costing_more_than_the_limit(
    client: Client, task_queue: str
) -> None:
    config = make_config(
        task_queue,
        ceiling=ALLOW,
        quotas=[
            quota("sleeps", 5, "1h", tools=["probe_sleep", "calculator"], costs={"probe_sleep": 3}),
            quota("never", 1, "1h", tools=["probe_echo"], costs={"probe_echo": 2}),
        ],
    )
    alice = someone()
    async with running_worker(client, config):
        slept = await run_call(client, task_queue, "probe_sleep", {"seconds": 0}, principal=alice)
        assert slept.status is CallStatus.COMPLETED
        assert (await calc(client, task_queue, alice)).status is CallStatus.COMPLETED
        assert (await calc(client, task_queue, alice)).status is CallStatus.COMPLETED
        over = await run_call(client, task_queue, "probe_sleep", {"seconds": 0}, principal=alice)
        assert over.error is not None
        assert "quota sleeps exceeded: 5 of 5 per 1h" in over.error.message
        too_big = await run_call(client, task_queue, "probe_echo", {"text": "x"}, principal=alice)
        assert too_big.error is not None
        assert too_big.error.code is ErrorCode.QUOTA_EXCEEDED
        assert too_big.error.retry_at is None
        assert not too_big.error.retryable
        assert "the call alone costs more than the quota allows" in too_big.error.message


async def test_the_ledger_continues_as_new_and_keeps_what_it_holds(
    client: Client, task_queue: str
) -> None:
    alice = someone()
    ledger_id = f"toolcalls-quota:sums:{alice.id}"
    # A ledger started ahead (as update-with-start would) that continues after three updates.
    await client.start_workflow(
        QuotaLedgerWorkflow.run, LedgerState(continue_after=3), id=ledger_id, task_queue=task_queue
    )
    config = make_config(task_queue, ceiling=ALLOW, quotas=[quota("sums", 5, "1h")])
    async with running_worker(client, config):
        results = [await calc(client, task_queue, alice) for _ in range(6)]
        handle = client.get_workflow_handle(ledger_id)
        held: list[Held] = await handle.query(QuotaLedgerWorkflow.held)
    assert [r.status for r in results] == [CallStatus.COMPLETED] * 5 + [CallStatus.DENIED]
    assert len(held) == 5
    # Two continues: after updates 3 and 6 of the six reservations.
    chain = [e async for e in client.list_workflows(f'WorkflowId = "{ledger_id}"')]
    assert len(chain) >= 3
    history = await client.get_workflow_handle(ledger_id, run_id=chain[-1].run_id).fetch_history()
    assert history.events[-1].event_type is EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (quota("q", 1, "soon"), "'soon' is not a duration such as 90s, 30m, 8h or 1d"),
        (quota("q", 0, "1d"), "limit"),
        (quota("q", 1, "0s"), "a quota's window is more than 0 seconds"),
        (quota("Q", 1, "1d"), "name"),
        (quota("q", 1, "1d", costs={"calculator": -1}), "costs.calculator: a cost is 0 to"),
    ],
)
def test_a_bad_quota_is_a_configuration_error(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match="quotas") as raised:
        parse_config({"quotas": [entry]}, "test config")
    assert problem in str(raised.value)
