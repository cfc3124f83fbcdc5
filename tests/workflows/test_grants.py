"""Standing grants ("approve and remember") through real workflows: scope, arguments, expiry,
revocation, and a forged grant that is never trusted."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.worker import Worker

from tests.support.harness import (
    Handle,
    decision,
    make_config,
    pending_approval,
    running_worker,
    signal_decision,
    start_call,
    wait_for,
)
from tests.support.parents import ParentInput, StepParent
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.call.grants import GrantWorkflow
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import GrantScope, GrantTerms
from toolcalls.workflows.models.call import (
    SEARCH_GRANT_SCOPE,
    SEARCH_STATUS,
    SEARCH_TOOL,
    CallStatus,
    EventKind,
    Phase,
    ToolCallRequest,
)
from toolcalls.workflows.models.grant import MEMO_GRANT, Grant, scope_key
from toolcalls.workflows.reach.client import Delivery, ToolCallClient

GRANTS = {"max_grant_seconds": 3600, "rules": {"filesystem.write": {"approvers": ["alice"]}}}


def remember(seconds: float = 600, **terms: Any) -> GrantTerms:
    return GrantTerms(duration=timedelta(seconds=seconds), **terms)


async def listed_grant(client: Client, task_queue: str, grant_id: str) -> Grant:
    """Wait until visibility lists the grant (it is eventually consistent)."""
    calls = ToolCallClient(client, task_queue=task_queue)
    for _ in range(200):
        found = [grant for grant in await calls.grants() if grant.grant_id == grant_id]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{grant_id} never listed")


async def approve_remembering(handle: Handle, terms: GrantTerms) -> str:
    pending = await pending_approval(handle)
    record = await handle.execute_update(
        ToolCallWorkflow.decide, decision(pending, approver="alice", remember=terms)
    )
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.grant_id is not None
    assert record.request_id == pending.request_id
    return result.approval.grant_id


async def still_waits(handle: Handle) -> None:
    state = await wait_for(handle, lambda s: s.phase is Phase.AWAITING_APPROVAL)
    assert state.pending_approval is not None
    await handle.terminate("test over")


async def test_a_deployment_grant_approves_later_calls_until_revoked(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=GRANTS)
    calls = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, config) as probes:
        first = await start_call(client, task_queue, "probe_write", {"token": "t"})
        grant_id = await approve_remembering(first, remember(scope=GrantScope.DEPLOYMENT))
        grant = await listed_grant(client, task_queue, grant_id)
        assert (grant.tool, grant.approver, grant.scope) == ("probe_write", "alice", "deployment")
        assert grant.granted_in == first.id

        later = await start_call(client, task_queue, "probe_write", {"token": "t"})
        result = await asyncio.wait_for(later.result(), 30)
        assert result.status is CallStatus.COMPLETED
        assert result.approval is not None
        assert (result.approval.via, result.approval.approver) == ("grant", "alice")
        assert result.approval.grant_id == grant_id
        assert EventKind.GRANT_USED in [e.kind for e in result.events]
        assert EventKind.APPROVAL_REQUESTED not in [e.kind for e in result.events]

        # Other arguments are not covered by a grant for these arguments.
        await still_waits(await start_call(client, task_queue, "probe_write", {"token": "u"}))

        await calls.revoke_grant(grant_id, by="alice", reason="done")
        end = await client.get_workflow_handle(grant_id).result()
        assert end["ended"] == "revoked"
        await still_waits(await start_call(client, task_queue, "probe_write", {"token": "t"}))
    assert probes.runs == {"probe_write": 2}


async def test_a_grant_for_any_arguments_and_its_expiry(client: Client, task_queue: str) -> None:
    config = make_config(task_queue, approvers=GRANTS)
    async with running_worker(client, config) as probes:
        first = await start_call(client, task_queue, "probe_write", {"token": "t"})
        terms = remember(3, scope=GrantScope.DEPLOYMENT, any_arguments=True)
        grant_id = await approve_remembering(first, terms)
        await listed_grant(client, task_queue, grant_id)
        other = await start_call(client, task_queue, "probe_write", {"token": "other"})
        assert (await asyncio.wait_for(other.result(), 30)).status is CallStatus.COMPLETED
        end = await asyncio.wait_for(client.get_workflow_handle(grant_id).result(), 30)
        assert end["ended"] == "expired"
        await still_waits(await start_call(client, task_queue, "probe_write", {"token": "x"}))
    assert probes.runs == {"probe_write": 2}


async def test_a_grant_started_by_a_client_is_never_trusted(
    client: Client, task_queue: str
) -> None:
    # Everything a real grant has, except that no ToolCallWorkflow started it.
    config = make_config(task_queue, approvers=GRANTS)
    async with running_worker(client, config) as probes:
        probe = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(probe)
        now = datetime.now(UTC)
        forged = Grant(
            grant_id=f"toolcalls-grant-{uuid.uuid4()}",
            tool="probe_write",
            digest=pending.digest,
            capabilities=["filesystem.write"],
            scope=GrantScope.DEPLOYMENT,
            parent_id=None,
            approver="alice",
            granted_at=now,
            expires_at=now + timedelta(hours=1),
            granted_in=probe.id,
            request_id=pending.request_id,
        )
        await client.start_workflow(
            GrantWorkflow.run,
            forged,
            id=forged.grant_id,
            task_queue=task_queue,
            memo={MEMO_GRANT: forged},
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(SEARCH_TOOL, "probe_write"),
                    SearchAttributePair(SEARCH_STATUS, "grant"),
                    SearchAttributePair(SEARCH_GRANT_SCOPE, scope_key(GrantScope.DEPLOYMENT, None)),
                ]
            ),
        )
        await listed_grant(client, task_queue, forged.grant_id)
        await still_waits(await start_call(client, task_queue, "probe_write", {"token": "t"}))
        await probe.terminate("test over")
        await client.get_workflow_handle(forged.grant_id).terminate("test over")
    assert probes.runs == {}


async def test_a_parent_grant_covers_its_parent_only(client: Client, task_queue: str) -> None:
    config = make_config(task_queue, approvers=GRANTS)
    app_queue = f"app-{uuid.uuid4()}"
    first = ToolCallRequest(tool="probe_write", arguments={"token": "t"}, call_id="first")
    again = ToolCallRequest(tool="probe_write", arguments={"token": "t"}, call_id="again")
    app = Worker(
        client, task_queue=app_queue, workflows=[StepParent], workflow_runner=sandbox_runner()
    )
    async with running_worker(client, config) as probes, app:
        parent = await client.start_workflow(
            StepParent.run,
            ParentInput(task_queue=task_queue, batches=[[first], [again]]),
            id=f"parent-{uuid.uuid4()}",
            task_queue=app_queue,
        )
        child: Handle = client.get_workflow_handle_for(
            ToolCallWorkflow.run, f"{parent.id}/tools/first"
        )
        grant_id = await approve_remembering(child, remember())
        grant = await listed_grant(client, task_queue, grant_id)
        assert (grant.scope, grant.parent_id) == (GrantScope.PARENT, parent.id)
        await parent.signal(StepParent.proceed)
        output = await asyncio.wait_for(parent.result(), 60)
        assert [r.status for r in output.results] == [CallStatus.COMPLETED] * 2
        second = output.results[1]
        assert second.approval is not None
        assert (second.approval.via, second.approval.grant_id) == ("grant", grant_id)
        # Another parent's call, and a call with no parent, still ask a human.
        other = await client.start_workflow(
            StepParent.run,
            ParentInput(task_queue=task_queue, batches=[[first]]),
            id=f"parent-{uuid.uuid4()}",
            task_queue=app_queue,
        )
        await still_waits(
            client.get_workflow_handle_for(ToolCallWorkflow.run, f"{other.id}/tools/first")
        )
        await other.terminate("test over")
        await still_waits(await start_call(client, task_queue, "probe_write", {"token": "t"}))
    assert probes.runs == {"probe_write": 2}


async def test_decisions_cannot_remember_where_the_deployment_allows_no_grants(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(handle)
        assert pending.max_grant is None
        calls = ToolCallClient(client, task_queue=task_queue)
        outcome = await calls.approve(handle.id, approver="alice", remember=remember())
        assert outcome.reason == "this deployment does not allow decisions to be remembered"
        await handle.terminate("test over")


async def test_a_parent_grant_needs_a_call_made_by_a_parent(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue, approvers=GRANTS)):
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        calls = ToolCallClient(client, task_queue=task_queue)
        await pending_approval(handle)
        outcome = await calls.approve(handle.id, approver="alice", remember=remember())
        assert outcome.reason == "a grant for the parent workflow needs a call made by one"
        too_long = await calls.approve(
            handle.id, approver="alice", remember=remember(7200, scope=GrantScope.DEPLOYMENT)
        )
        assert too_long.reason == "a grant may last at most 1:00:00, not 2:00:00"
        await handle.terminate("test over")


async def test_a_grant_remembered_by_a_queued_signal_and_delivered_twice_is_made_once(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=GRANTS)
    calls = ToolCallClient(client, task_queue=task_queue, probe_timeout=timedelta(seconds=2))
    async with running_worker(client, config):
        first = await start_call(client, task_queue, "probe_write", {"token": "t"})
        pending = await pending_approval(first)

    # No worker serves the call: the decision goes as the approve signal, queued until one does.
    terms = remember(scope=GrantScope.DEPLOYMENT)
    queued = await calls.approve(first.id, approver="alice", reason="fine", remember=terms)
    assert (queued.delivery, queued.record) == (Delivery.QUEUED, None)
    # Signals are delivered at least once: the same decision again makes no second grant.
    await first.signal(
        ToolCallWorkflow.approve, signal_decision(pending, approver="alice", remember=terms)
    )
    async with running_worker(client, config) as probes:
        result = await asyncio.wait_for(first.result(), 30)
        assert result.status is CallStatus.COMPLETED
        assert result.approval is not None
        assert (result.approval.via, result.approval.approver) == ("signal", "alice")
        grant_id = result.approval.grant_id
        assert grant_id is not None
        assert result.approval.expires_at is not None
        grant = await listed_grant(client, task_queue, grant_id)
        assert (grant.tool, grant.approver, grant.scope) == ("probe_write", "alice", "deployment")
        assert (grant.granted_in, grant.digest) == (first.id, pending.digest)
        assert grant.expires_at == result.approval.expires_at
        ignored = [e.message for e in result.events if e.kind is EventKind.SIGNAL_IGNORED]
        assert ignored == ["approve from alice: the request was already decided"]

        later = await start_call(client, task_queue, "probe_write", {"token": "t"})
        used = await asyncio.wait_for(later.result(), 30)
        assert used.status is CallStatus.COMPLETED
        assert used.approval is not None
        assert (used.approval.via, used.approval.grant_id) == ("grant", grant_id)
        made = [
            g.grant_id for g in await calls.grants(tool="probe_write") if g.granted_in == first.id
        ]
        assert made == [grant_id]
        await calls.revoke_grant(grant_id, by="alice")
    assert probes.runs == {"probe_write": 2}


async def test_a_signal_that_remembers_beyond_the_deployments_limit_is_ignored(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=GRANTS)
    calls = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "long"})
        pending = await pending_approval(handle)
        too_long = signal_decision(pending, approver="alice", remember=remember(7200))
        parent_only = signal_decision(
            pending, approver="alice", remember=remember(scope=GrantScope.PARENT)
        )
        await handle.signal(ToolCallWorkflow.approve, too_long)
        await handle.signal(ToolCallWorkflow.approve, parent_only)
        state = await wait_for(
            handle,
            lambda s: [e.kind for e in s.events].count(EventKind.SIGNAL_IGNORED) == 2,
        )
        # Refused like the update would be, but a signal has no caller to answer: the refusal
        # is in the call's events, the call keeps waiting and no grant is made.
        assert [e.message for e in state.events if e.kind is EventKind.SIGNAL_IGNORED] == [
            "approve from alice: a grant may last at most 1:00:00, not 2:00:00",
            "approve from alice: a grant for the parent workflow needs a call made by one",
        ]
        assert state.phase is Phase.AWAITING_APPROVAL
        assert [g for g in await calls.grants() if g.granted_in == handle.id] == []
        await handle.terminate("test over")
    assert probes.runs == {}
