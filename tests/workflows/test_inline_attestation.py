"""The tool activities of a deployment with ``[inline]`` keys run for a workflow that is not
``ToolCallWorkflow`` only with the plan's attestation for that very run, call and arguments.

``DirectCaller`` (``tests/support/attestations.py``) is application code calling the deployment's
activities itself: the ``plan`` activity, then a tool with whatever input, so only the
activities' own guard stands between what it sends and the tool.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from tests.support.attestations import Attempted, DirectCaller, Step
from tests.support.harness import make_config, running_worker
from tests.support.inline import inline_config
from toolcalls.activities.catalog import call_digest
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.approval import ApprovalRecord
from toolcalls.workflows.models.attest import Attestation
from toolcalls.workflows.models.call import ExecuteInput, PlanInput, PlanOutcome

ALLOW_WRITES = {"default_effect": "allow"}
HOLD_WRITES = {"default_effect": "allow", "rules": {"filesystem.write": "require_approval"}}
NOT_PLANNED = "its attestation is not the deployment's for this workflow run, call and decision"


@asynccontextmanager
async def caller_worker(client: Client) -> AsyncIterator[str]:
    queue = f"app-{uuid.uuid4()}"
    async with Worker(
        client, task_queue=queue, workflows=[DirectCaller], workflow_runner=sandbox_runner()
    ):
        yield queue


def plan_step(task_queue: str, token: str, call_id: str = "c") -> Step:
    plan = PlanInput(tool="probe_write", arguments={"token": token}, call_id=call_id, inline=True)
    return Step(task_queue=task_queue, plan=plan)


def write_input(token: str, call_id: str = "c", **changes: Any) -> ExecuteInput:
    """The input an inline call of ``probe_write`` sends, as the catalog plans it."""
    sent = ExecuteInput(
        tool="probe_write",
        arguments={"token": token},
        digest=call_digest("probe_write", {"token": token}),
        call_id=call_id,
        idempotency_key=f"p/tools/{call_id}:{call_id}",
    )
    return sent.model_copy(update=changes)


def tool_step(
    task_queue: str, input: ExecuteInput, *, attest: bool = False, activity: str = "probe_write"
) -> Step:
    return Step(task_queue=task_queue, activity=activity, input=input, attest=attest)


async def run_steps(client: Client, queue: str, steps: list[Step]) -> list[Attempted]:
    handle = await client.start_workflow(
        DirectCaller.run, steps, id=f"direct-{uuid.uuid4()}", task_queue=queue
    )
    return await asyncio.wait_for(handle.result(), 60)


async def test_a_tool_runs_only_with_the_attestation_of_its_own_plan(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = inline_config(task_queue, monkeypatch, ceiling=ALLOW_WRITES)
    async with running_worker(client, config) as probes, caller_worker(client) as queue:
        # Another run's plan: its attestation is genuine, but for that run.
        [planned_elsewhere] = await run_steps(client, queue, [plan_step(task_queue, "t")])
        elsewhere = PlanOutcome.model_validate(planned_elsewhere.output).attestation
        assert elsewhere is not None
        assert elsewhere.key_id == "i2"  # the newest key signs
        forged = Attestation(key_id="i2", signature="0" * 64)
        unknown = Attestation(key_id="k9", signature=elsewhere.signature)
        results = await run_steps(
            client,
            queue,
            [
                tool_step(task_queue, write_input("t")),
                tool_step(task_queue, write_input("t", attestation=elsewhere)),
                tool_step(task_queue, write_input("t", attestation=forged)),
                tool_step(task_queue, write_input("t", attestation=unknown)),
                plan_step(task_queue, "t"),
                # This run's own plan, but for another call id, or for other arguments.
                tool_step(task_queue, write_input("t", call_id="other"), attest=True),
                tool_step(task_queue, write_input("u"), attest=True),
                tool_step(
                    task_queue,
                    write_input("u"),
                    attest=True,
                    activity="probe_write.prepare",
                ),
                tool_step(task_queue, write_input("t"), attest=True),
            ],
        )
    missing, other_run, bad_signature, other_key, plan, other_call, other_args, prepare, ok = (
        results
    )
    assert missing.error_type == "policy_denied"
    assert missing.message == (
        "probe_write: the deployment did not plan this call: "
        "it carries no attestation of the deployment"
    )
    for refused in (other_run, bad_signature, other_call, other_args, prepare):
        assert refused.error_type == "policy_denied", refused
        assert NOT_PLANNED in refused.message
    assert other_key.error_type == "policy_denied"
    assert "names key 'k9', which is not one of this worker's attestation keys" in other_key.message
    assert plan.error_type is None
    # Its own plan's attestation, for the very call and arguments planned: the tool runs, once.
    assert ok.error_type is None, ok.message
    assert ok.output["token"] == "t"
    assert probes.runs == {"probe_write": 1}


async def test_an_attested_call_still_needs_the_ceilings_approval_and_keys(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyless = f"{task_queue}-keyless"
    approval = ApprovalRecord(
        request_id="r",
        digest=write_input("t").digest,
        approved=True,
        approver="self",
        reason=None,
        decided_at=datetime(2026, 1, 1, tzinfo=UTC),
        via="update",
    )
    config = inline_config(task_queue, monkeypatch, ceiling=HOLD_WRITES)
    async with (
        running_worker(client, config) as probes,
        running_worker(client, make_config(keyless, ceiling=ALLOW_WRITES)) as keyless_probes,
        caller_worker(client) as queue,
    ):
        results = await run_steps(
            client,
            queue,
            [
                plan_step(task_queue, "t"),
                # A genuine attestation and a made-up approval: the ceiling's approval is the
                # deployment's to record, in its own workflow.
                tool_step(task_queue, write_input("t", approval=approval), attest=True),
                # A worker with keys of its own (none configured) runs none of the deployment's.
                tool_step(keyless, write_input("t"), attest=True),
            ],
        )
    planned, held, no_keys = results
    assert planned.error_type is None
    assert held.error_type == "policy_denied"
    assert held.message.startswith("probe_write: the deployment requires an approval for this call")
    assert held.message.endswith("which only ToolCallWorkflow records")
    assert no_keys.error_type == "policy_denied"
    assert no_keys.message == (
        "probe_write: the deployment did not plan this call: its attestation names key 'i2', "
        "which is not one of this worker's attestation keys"
    )
    assert probes.runs == {}
    assert keyless_probes.runs == {}
