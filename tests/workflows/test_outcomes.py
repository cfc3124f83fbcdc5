"""Every final status and error code, reached through a real ToolCallWorkflow on a real server."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.harness import (
    decision,
    history_types,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
    wait_for,
)
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    EventKind,
    Phase,
)

ALLOW_ALL = {"ceiling": {"default_effect": "allow"}}


async def test_completed_calculator(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(client, task_queue, "calculator", {"expression": " (18 + 6) / 3 "})
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "(18 + 6) / 3", "result": 8.0}
    assert result.error is None
    assert result.digest is not None
    assert len(result.digest) == 64
    assert [e.kind for e in result.events] == [
        EventKind.PLANNED,
        EventKind.STARTED,
        EventKind.FINISHED,
    ]


async def test_completed_read_tool_as_regular_activity(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await run_call(client, task_queue, "probe_echo", {"text": "hi"})
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"text": "hi"}
    assert result.capabilities == ["network.read"]
    assert probes.runs == {"probe_echo": 1}


async def test_unknown_tool_fails_at_plan(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await run_call(client, task_queue, "no_such_tool", {})
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.UNKNOWN_TOOL
    assert "calculator" in result.error.message
    assert probes.runs == {}


async def test_invalid_arguments_name_the_fixable_args(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(
            client, task_queue, "calculator", {"expression": "__import__('os')", "extra": 1}
        )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == ["expression", "extra"]
    assert [e.kind for e in result.events] == [EventKind.FINISHED]


async def test_tool_failure_is_a_result(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(client, task_queue, "calculator", {"expression": "1 % 0"})
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.EXECUTION_FAILED
    assert result.error.message == "calculator: division by zero"
    assert result.error.fixable_args == ["expression"]


async def test_unexpected_exception_is_internal(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await run_call(client, task_queue, "probe_boom", {"text": "x"})
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INTERNAL
    assert "RuntimeError: boom: x" in result.error.message
    assert probes.runs == {"probe_boom": 1}


async def test_output_over_the_payload_cap(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        result = await run_call(client, task_queue, "probe_echo", {"size": 1_100_000})
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.OUTPUT_TOO_LARGE


async def test_tool_nobody_serves_is_unavailable(client: Client, task_queue: str) -> None:
    config = make_config(
        task_queue,
        activities={"schedule_to_start_seconds": 1, "task_queues": {"probe_echo": "nobody"}},
    )
    async with running_worker(client, config) as probes:
        result = await run_call(client, task_queue, "probe_echo", {"text": "hi"})
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.TOOL_UNAVAILABLE
    assert result.error.retryable
    assert "'nobody'" in result.error.message
    assert probes.runs == {}


async def test_ceiling_deny_cannot_be_loosened_by_the_request(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, ceiling={"rules": {"network.*": "deny"}})
    async with running_worker(client, config) as probes:
        result = await run_call(
            client,
            task_queue,
            "probe_echo",
            {"text": "hi"},
            policy=CapabilityPolicy(rules={"network.read": Effect.ALLOW}),
        )
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.POLICY_DENIED
    assert "network.read: deny (deployment rule network.*)" in result.error.message
    assert probes.runs == {}


async def test_request_policy_can_deny(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await run_call(
            client,
            task_queue,
            "probe_echo",
            {"text": "hi"},
            policy=CapabilityPolicy(default_effect=Effect.DENY),
        )
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.POLICY_DENIED
    assert "request rule default" in result.error.message
    assert probes.runs == {}


async def test_deadline_already_passed_is_budget_exceeded(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await run_call(
            client, task_queue, "probe_echo", {"text": "hi"}, timeout=timedelta(microseconds=1)
        )
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.BUDGET_EXCEEDED
    assert probes.runs == {}


async def test_deadline_bounds_the_running_activity(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)):
        result = await run_call(
            client, task_queue, "probe_sleep", {"seconds": 30}, timeout=timedelta(seconds=2)
        )
    # A write whose schedule-to-close (the deadline) expired after it started may have acted.
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN


async def test_an_uncertain_write_carries_what_it_last_reported(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)):
        result = await run_call(
            client, task_queue, "probe_sleep", {"seconds": 30}, timeout=timedelta(seconds=3)
        )
    assert result.status is CallStatus.UNCERTAIN
    # probe_sleep heartbeats its ticks: the operator sees how far it got.
    assert isinstance(result.output, dict)
    assert set(result.output) == {"ticks"}
    assert result.output["ticks"] > 0


async def test_read_that_overruns_times_out(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await run_call(client, task_queue, "probe_slow_read", {"seconds": 3})
    assert result.status is CallStatus.TIMED_OUT
    assert result.error is not None
    assert result.error.code is ErrorCode.TIMED_OUT
    assert "start-to-close" in result.error.message
    assert probes.runs == {"probe_slow_read": 1}


async def test_lost_write_is_uncertain_and_never_redispatched(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)) as probes:
        result = await run_call(client, task_queue, "probe_stall", {"seconds": 5})
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert "heartbeat timeout" in result.error.message
    assert "inspect before calling again" in result.error.message
    assert probes.runs == {"probe_stall": 1}


async def test_cancel_running_write_is_uncertain_and_keeps_partial_output(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)) as probes:
        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 30})
        await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
        await asyncio.sleep(1.0)
        await handle.cancel()
        result = await handle.result()
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert result.error.message == (
        "probe_sleep: canceled; the effect may have begun: inspect before calling again"
    )
    assert not result.error.retryable
    assert probes.runs == {"probe_sleep": 1}
    assert isinstance(result.output, dict)
    assert result.output["ticks"] >= 5


async def test_cancel_while_waiting_for_approval(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 1})
        await wait_for(handle, lambda s: s.phase is Phase.AWAITING_APPROVAL)
        await handle.cancel()
        result = await handle.result()
    assert result.status is CallStatus.CANCELED
    assert probes.runs == {}


_EXPECTED_STATUS = {
    ErrorCode.POLICY_DENIED: CallStatus.DENIED,
    ErrorCode.APPROVAL_DENIED: CallStatus.DENIED,
    ErrorCode.APPROVAL_TIMED_OUT: CallStatus.DENIED,
    ErrorCode.BUDGET_EXCEEDED: CallStatus.DENIED,
    ErrorCode.CONNECTION_REQUIRED: CallStatus.DENIED,
    ErrorCode.TIMED_OUT: CallStatus.TIMED_OUT,
    ErrorCode.CANCELED: CallStatus.CANCELED,
    ErrorCode.UNCERTAIN: CallStatus.UNCERTAIN,
}


@pytest.mark.parametrize("code", list(ErrorCode))
async def test_every_tool_error_code_maps_to_its_status(
    client: Client, task_queue: str, code: ErrorCode
) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await run_call(client, task_queue, "probe_fail", {"code": code.value})
    assert result.status is _EXPECTED_STATUS.get(code, CallStatus.FAILED)
    assert result.error is not None
    assert result.error.code is code
    assert result.error.message == f"probe_fail: {code.value}"
    assert result.error.fixable_args == ["code"]
    assert not result.error.retryable
    assert result.output == {"partial": True}
    assert probes.runs == {"probe_fail": 1}


async def test_retryable_read_error_is_retried_up_to_the_deployment_limit(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, activities={"read_attempts": 3})
    async with running_worker(client, config) as probes:
        result = await run_call(
            client, task_queue, "probe_fail", {"code": "execution_failed", "retryable": True}
        )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.retryable
    assert probes.runs == {"probe_fail": 3}


async def test_cancellation_does_not_reach_an_activity_without_heartbeats(
    client: Client, task_queue: str
) -> None:
    """Why the catalog insists on heartbeats for long tools: without one, cancel never arrives."""
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_nap", {"seconds": 3})
        await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
        await handle.cancel()
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"ticks": 30}
    assert probes.runs == {"probe_nap": 1}


async def test_an_allowed_pure_tool_runs_inside_its_plan(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "calculator", {"expression": "6 * 7"})
        result = await handle.result()
        failed = await run_call(client, task_queue, "calculator", {"expression": "1 / 0"})
        gated = await start_call(
            client,
            task_queue,
            "calculator",
            {"expression": "2 + 2"},
            policy=CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL}),
        )
        pending = await pending_approval(gated)
        await gated.execute_update(ToolCallWorkflow.decide, decision(pending))
        approved = await gated.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "6 * 7", "result": 42}
    types = await history_types(handle)
    # One local activity (the plan, which ran the tool) and one visibility write, at the end.
    assert types.count(EventType.EVENT_TYPE_MARKER_RECORDED) == 1
    assert types.count(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES) == 1
    assert [e.message for e in result.events if e.kind is EventKind.STARTED] == [
        "calculator ran in the plan"
    ]
    # A failure inside the plan is the tool's, typed as it would be from its own activity.
    assert failed.status is CallStatus.FAILED
    assert failed.error is not None
    assert failed.error.code is ErrorCode.EXECUTION_FAILED
    assert "division by zero" in failed.error.message
    # A call that needs an approval never runs in its plan: after the approval, its activity.
    # Its markers: the plan, the approval's attestation, the tool, and two patches (the
    # attestation's, and the decision's canonical approver names).
    assert approved.status is CallStatus.COMPLETED
    assert (await history_types(gated)).count(EventType.EVENT_TYPE_MARKER_RECORDED) == 5
