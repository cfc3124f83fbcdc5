"""The "respond" decision: an approver answers a waiting call in place of the tool (never run).

On a real dev server and worker, with the probe tools (``probes.runs`` counts executions): by
update and by signal, through ``ToolCallClient`` with and without a worker, refused where the
deployment forbids it, and with a two-person rule.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from tests.support.client import listed_pending, write_request
from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    running_worker,
    signal_decision,
    start_call,
    update_rejection,
    wait_for,
)
from tests.support.patches import without_patch
from toolcalls.workflows.call.decisions import RESPOND_PATCH
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import (
    MAX_RESPONSE_CHARS,
    ApprovalDecision,
    ApprovalRecord,
)
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, ToolCallResult
from toolcalls.workflows.models.reply import model_reply
from toolcalls.workflows.reach.client import Delivery, ToolCallClient

ANSWER = "The report is in /srv/reports/q3.txt; no need to write it again."
FORBIDDEN = "this deployment does not allow answering a call in place of the tool"
PROBE = timedelta(seconds=2)


def assert_responded(result: ToolCallResult, by: str, via: str) -> None:
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.RESPONDED
    assert result.error.message == f"probe_write: {by} answered in place of the tool"
    assert result.response == ANSWER
    assert result.approval is not None
    assert (result.approval.approved, result.approval.approver, result.approval.via) == (
        False,
        by,
        via,
    )
    assert result.approval.response == ANSWER
    assert result.output is None
    assert EventKind.RESPONDED in [event.kind for event in result.events]
    reply = model_reply(result)
    assert reply.text == f"a person answered in place of the tool (it did not run): {ANSWER}"
    assert not reply.is_error


@pytest.mark.parametrize("via", ["update", "signal"])
async def test_a_response_ends_the_call_and_the_tool_never_runs(
    client: Client, task_queue: str, via: str
) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "r"})
        pending = await pending_approval(handle)
        assert pending.respond
        if via == "update":
            sent = decision(pending, approved=False, approver="carol", response=ANSWER)
            record = await handle.execute_update(ToolCallWorkflow.decide, sent)
            assert (record.approved, record.response) == (False, ANSWER)
        else:
            await handle.signal(
                ToolCallWorkflow.deny, signal_decision(pending, "carol", response=ANSWER)
            )
        result = await handle.result()
    assert_responded(result, "carol", via)
    assert probes.runs == {}


async def test_the_client_responds_with_a_worker_and_queues_without_one(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    config = make_config(task_queue)
    async with running_worker(client, config) as probes:
        live = await tools.start(write_request("live"))
        later = await tools.start(write_request("later"))
        await listed_pending(tools, live.id, later.id)
        outcome = await tools.respond(live.id, ANSWER, responder="alice")
        assert outcome.delivery is Delivery.ACCEPTED
        assert isinstance(outcome.record, ApprovalRecord)
        assert outcome.record.response == ANSWER
        assert_responded(await live.result(), "alice", "update")
    assert probes.runs == {}

    # The worker has stopped: the response goes as the deny signal and waits for one.
    queued = await asyncio.wait_for(tools.respond(later.id, ANSWER, responder="bob"), 20)
    assert queued.delivery is Delivery.QUEUED
    async with running_worker(client, config) as probes:
        result = await asyncio.wait_for(later.result(), 30)
    assert_responded(result, "bob", "signal")
    assert probes.runs == {}


@pytest.mark.parametrize("text", ["", "  \n", "x" * (MAX_RESPONSE_CHARS + 1)])
def test_a_blank_or_overlong_response_is_refused_before_it_is_sent(text: str) -> None:
    with pytest.raises(ValidationError, match="response"):
        ApprovalDecision(request_id="r", digest="d", approved=False, response=text)


async def test_a_response_is_refused_where_the_deployment_forbids_it(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, approvers={"respond": False})
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "f"})
        pending = await pending_approval(handle)
        assert not pending.respond
        sent = decision(pending, approved=False, response=ANSWER)
        assert await update_rejection(handle, ToolCallWorkflow.decide, sent) == FORBIDDEN
        await handle.signal(ToolCallWorkflow.deny, signal_decision(pending, "bob", response=ANSWER))
        state = await wait_for(
            handle, lambda s: any(e.kind is EventKind.SIGNAL_IGNORED for e in s.events)
        )
        ignored = [e.message for e in state.events if e.kind is EventKind.SIGNAL_IGNORED]
        assert ignored == [f"deny from bob: {FORBIDDEN}"]
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.response is None
    assert probes.runs == {"probe_write": 1}


async def test_a_rule_may_forbid_responses_to_the_calls_it_matches(
    client: Client, task_queue: str
) -> None:
    rules = {"rules": {"probe_write": {"respond": False}}}
    async with running_worker(client, make_config(task_queue, approvers=rules)):
        handle = await start_call(client, task_queue, "probe_write", {"token": "g"})
        pending = await pending_approval(handle)
        assert not pending.respond
        sent = decision(pending, approved=False, response=ANSWER)
        assert await update_rejection(handle, ToolCallWorkflow.decide, sent) == FORBIDDEN
        await handle.cancel()


async def test_a_response_cannot_approve_edit_or_remember(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "h"})
        pending = await pending_approval(handle)
        approving = decision(pending, approved=True, response=ANSWER)
        assert await update_rejection(handle, ToolCallWorkflow.decide, approving) == (
            "an answer in place of the tool goes with a denial (approved=false)"
        )
        editing = decision(pending, approved=False, response=ANSWER, arguments={"token": "i"})
        assert await update_rejection(handle, ToolCallWorkflow.decide, editing) == (
            "an answer in place of the tool cannot edit the arguments or create a grant"
        )
        await handle.execute_update(
            ToolCallWorkflow.decide, decision(pending, approved=False, response=ANSWER)
        )
        result = await handle.result()
    assert result.error is not None
    assert result.error.code is ErrorCode.RESPONDED
    assert probes.runs == {}


async def test_under_a_two_person_rule_one_response_ends_the_call(
    client: Client, task_queue: str
) -> None:
    approvers = {
        "groups": {"ops": ["alice", "bob"]},
        "rules": {"probe_write": {"approvers": ["ops"], "min_approvals": 2}},
    }
    async with running_worker(client, make_config(task_queue, approvers=approvers)) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "j"})
        pending = await pending_approval(handle)
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
        outsider = decision(pending, approved=False, approver="mallory", response=ANSWER)
        assert "'mallory' may not decide this call" in await update_rejection(
            handle, ToolCallWorkflow.decide, outsider
        )
        sent = decision(pending, approved=False, approver="bob", response=ANSWER)
        await handle.execute_update(ToolCallWorkflow.decide, sent)
        result = await handle.result()
    assert_responded(result, "bob", "update")
    assert probes.runs == {}


async def test_a_run_without_the_patch_takes_no_response(client: Client, task_queue: str) -> None:
    """As a worker from before responses: the update is refused and the signal ignored, so a
    history recorded then replays the same way; an ordinary denial still ends the call."""
    old = without_patch(client, RESPOND_PATCH)
    async with running_worker(old, make_config(task_queue)) as probes:
        handle = await start_call(old, task_queue, "probe_write", {"token": "old"})
        pending = await pending_approval(handle)
        sent = decision(pending, approved=False, response=ANSWER)
        assert await update_rejection(handle, ToolCallWorkflow.decide, sent) == (
            "this worker does not take answers in place of the tool"
        )
        await handle.signal(ToolCallWorkflow.deny, signal_decision(pending, "bob", response=ANSWER))
        await wait_for(handle, lambda s: any(e.kind is EventKind.SIGNAL_IGNORED for e in s.events))
        await handle.signal(ToolCallWorkflow.deny, signal_decision(pending, "bob", "no"))
        result = await handle.result()
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_DENIED
    assert result.response is None
    ignored = [e.message for e in result.events if e.kind is EventKind.SIGNAL_IGNORED]
    assert ignored == ["deny from bob: this worker does not take answers in place of the tool"]
    assert probes.runs == {}
