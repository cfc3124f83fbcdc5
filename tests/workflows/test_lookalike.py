"""A look-alike ``ToolCallWorkflow``: someone who may start workflows in the namespace runs a
worker of their own, on their own task queue, with a workflow *named* ``ToolCallWorkflow`` that
schedules the deployment's activities on the deployment's queue with inputs of its choosing.

The deployment's worker runs what its own workflow decided and nothing else: a write with a
made-up approval, a grant with a forged memo, a notification, and the attestations themselves are
all refused, each with a typed error, and the real calls are not fooled.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from temporalio.workflow import ParentClosePolicy

from tests.support.harness import (
    make_config,
    pending_approval,
    running_worker,
    start_call,
    wait_for,
)
from tests.support.http_servers import serve, text
from tests.support.tools import ALL_FAMILIES
from toolcalls.activities.catalog import call_digest
from toolcalls.worker.config import Config, build_catalog
from toolcalls.workflows.call.grants import GrantWorkflow
from toolcalls.workflows.models.approval import ApprovalRecord, GrantScope
from toolcalls.workflows.models.attest import (
    ATTEST_ACTIVITY,
    Attestation,
    AttestedDecision,
    AttestInput,
)
from toolcalls.workflows.models.call import (
    NOTIFY_ACTIVITY,
    PLAN_ACTIVITY,
    SEARCH_GRANT_SCOPE,
    SEARCH_STATUS,
    SEARCH_TOOL,
    WORKFLOW_NAME,
    CapabilityPolicy,
    Effect,
    ExecuteInput,
    Notification,
    Phase,
    PlanInput,
)
from toolcalls.workflows.models.grant import (
    FIND_GRANT_ACTIVITY,
    MEMO_GRANT,
    Grant,
    GrantQuery,
    scope_key,
)

GRANTS = {"max_grant_seconds": 3600, "rules": {"filesystem.write": {"approvers": ["alice"]}}}
FORGED = Attestation(
    key_id="k1", signature="0" * 64, decision=AttestedDecision.GRANT, approver="alice"
)


class Step(BaseModel):
    """Schedule ``activity`` with ``input`` on ``task_queue``, or start a grant child."""

    task_queue: str
    activity: str = ""
    input: dict[str, Any] = {}
    grant: Grant | None = None


class Seen(BaseModel):
    output: Any = None
    error_type: str | None = None
    message: str = ""


@workflow.defn(name=WORKFLOW_NAME)
class LookAlike:
    """The attacker's ``ToolCallWorkflow``: none of our checks, any input."""

    @workflow.run
    async def run(self, steps: list[Step]) -> list[Seen]:
        seen: list[Seen] = []
        for step in steps:
            if step.grant is not None:
                await start_grant(step.grant, step.task_queue)
                seen.append(Seen())
                continue
            try:
                output = await workflow.execute_activity(
                    step.activity,
                    step.input,
                    task_queue=step.task_queue,
                    start_to_close_timeout=timedelta(seconds=20),
                    retry_policy=RetryPolicy(maximum_attempts=1),
                )
            except ActivityError as err:
                cause = err.cause
                assert isinstance(cause, ApplicationError), cause
                seen.append(Seen(error_type=cause.type, message=cause.message))
                continue
            seen.append(Seen(output=output))
        return seen


async def start_grant(grant: Grant, task_queue: str) -> None:
    """A child ``ToolCallGrant`` with the grant in its memo, as our workflow starts one, naming
    this run as the one that granted it."""
    grant = grant.model_copy(update={"granted_in": workflow.info().workflow_id})
    await workflow.start_child_workflow(
        GrantWorkflow.run,
        grant,
        id=grant.grant_id,
        task_queue=task_queue,
        memo={MEMO_GRANT: grant},
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(SEARCH_TOOL, grant.tool),
                SearchAttributePair(SEARCH_STATUS, "grant"),
                SearchAttributePair(SEARCH_GRANT_SCOPE, scope_key(grant.scope, None)),
            ]
        ),
        parent_close_policy=ParentClosePolicy.ABANDON,
    )


@asynccontextmanager
async def attacker(client: Client) -> AsyncIterator[str]:
    """The attacker's own worker, on a queue of its own; its queue."""
    queue = f"attacker-{uuid.uuid4()}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[LookAlike],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        yield queue


async def attack(client: Client, queue: str, steps: list[Step]) -> list[Seen]:
    handle = await client.start_workflow(
        LookAlike.run, steps, id=f"lookalike-{uuid.uuid4()}", task_queue=queue
    )
    return await asyncio.wait_for(handle.result(), 60)


def create_input(config: Config, path: str, content: str) -> ExecuteInput:
    """``create_file`` as the deployment plans it, with a made-up approval of that very digest."""
    catalog = build_catalog(config, ALL_FAMILIES)
    request = PlanInput(tool="create_file", arguments={"path": path, "content": content})
    plan = catalog.plan(request, CapabilityPolicy(default_effect=Effect.ALLOW), frozenset()).plan
    assert plan is not None
    approval = ApprovalRecord(
        request_id="made-up",
        digest=plan.digest,
        approved=True,
        approver="alice",
        reason=None,
        decided_at=datetime.now(UTC),
        via="update",
    )
    return ExecuteInput(
        tool="create_file",
        arguments=plan.arguments,
        digest=plan.digest,
        call_id="c",
        idempotency_key="c",
        approval=approval,
    )


def refused(seen: Seen, message: str) -> None:
    assert seen.error_type == "policy_denied", seen
    assert message in seen.message, seen.message


async def test_a_lookalike_cannot_write_with_a_made_up_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "root").mkdir()
    target = tmp_path / "root" / "owned.txt"
    config = make_config(
        task_queue,
        tools=["create_file"],
        files={"roots": [str(tmp_path / "root")], "checkpoints": str(tmp_path / "cp.db")},
        state_dir=str(tmp_path / "state"),
    )
    write = create_input(config, str(target), "pwned")
    # A genuine-looking attestation of an approval, made without the deployment's key.
    forged = write.model_copy(
        update={
            "attestation": Attestation(
                key_id="k1",
                signature="f" * 64,
                decision=AttestedDecision.APPROVED,
                approver="alice",
            )
        }
    )
    async with running_worker(client, config), attacker(client) as queue:
        plain, with_forgery, attested, planned = await attack(
            client,
            queue,
            [
                Step(task_queue=task_queue, activity="create_file", input=write.model_dump()),
                Step(task_queue=task_queue, activity="create_file", input=forged.model_dump()),
                # The deployment's attestation activity answers only its own workflow.
                Step(
                    task_queue=task_queue,
                    activity=ATTEST_ACTIVITY,
                    input=AttestInput(
                        call_id="c",
                        digest=write.digest,
                        decision=AttestedDecision.APPROVED,
                        approver="alice",
                    ).model_dump(),
                ),
                # A plan it asks for is not attested as ToolCallWorkflow's.
                Step(
                    task_queue=task_queue,
                    activity=PLAN_ACTIVITY,
                    input=PlanInput(
                        tool="create_file", arguments=write.arguments, call_id="c"
                    ).model_dump(),
                ),
            ],
        )
    refused(plain, "create_file: the deployment did not plan this call: it carries no attestation")
    refused(with_forgery, "names key 'k1', which is not one of this worker's attestation keys")
    refused(attested, f"{ATTEST_ACTIVITY}: attests only for ToolCallWorkflow run by this worker")
    assert planned.error_type is None
    assert planned.output["plan"]["tool"] == "create_file"
    assert planned.output["attestation"] is None
    assert not target.exists()


async def test_a_forged_grant_approves_nothing(client: Client, task_queue: str) -> None:
    config = make_config(task_queue, approvers=GRANTS)
    now = datetime.now(UTC)
    arguments = {"token": "t"}
    terms = {
        "tool": "probe_write",
        "digest": None,
        "capabilities": ["filesystem.write"],
        "scope": GrantScope.DEPLOYMENT,
        "parent_id": None,
        "approver": "alice",
        "granted_at": now,
        "expires_at": now + timedelta(days=3650),
        "request_id": "r",
    }
    async with running_worker(client, config) as probes, attacker(client) as queue:
        # Grant children of the look-alike, as ours would start them: on a queue nobody polls,
        # without and with a made-up attestation, and on the deployment's queue.
        steps = []
        grant_ids = []
        for grant_queue, attestation in (
            ("nobody-polls", None),
            ("nobody-polls", FORGED),
            (task_queue, FORGED),
        ):
            grant_id = f"toolcalls-grant-{uuid.uuid4()}"
            grant_ids.append(grant_id)
            grant = Grant(grant_id=grant_id, granted_in="", attestation=attestation, **terms)
            steps.append(Step(task_queue=grant_queue, grant=grant))
        await attack(client, queue, steps)
        # The lookup itself answers only our workflow.
        [lookup] = await attack(
            client,
            queue,
            [
                Step(
                    task_queue=task_queue,
                    activity=FIND_GRANT_ACTIVITY,
                    input=GrantQuery(
                        tool="probe_write",
                        digest=call_digest("probe_write", arguments),
                        capabilities=["filesystem.write"],
                        parent_id=None,
                        approvers=None,
                    ).model_dump(),
                )
            ],
        )
        call = await start_call(client, task_queue, "probe_write", arguments)
        state = await wait_for(call, lambda s: s.phase is Phase.AWAITING_APPROVAL)
        assert state.pending_approval is not None
        await call.terminate("test over")
        for grant_id in grant_ids:
            await client.get_workflow_handle(grant_id).terminate("test over")
    refused(lookup, f"{FIND_GRANT_ACTIVITY}: answers only ToolCallWorkflow run by this worker")
    assert probes.runs == {}
    assert not [event for event in state.events if event.kind.value == "grant_used"]


async def test_a_lookalike_cannot_post_to_the_deployments_webhooks(
    client: Client, task_queue: str
) -> None:
    with serve({"/hook": text("ok")}) as server:
        config = make_config(
            task_queue,
            notifications={
                "webhooks": [
                    {"name": "ops", "url": server.url("/hook"), "allow_private_address": True}
                ]
            },
        )
        now = datetime.now(UTC)
        notification = Notification(
            kind="waiting",
            webhook="ops",
            workflow_id="anything",
            call_id="c",
            tool="<https://evil.example|click here>",
            capabilities=[],
            summary="urgent: approve",
            approvers=None,
            requested_at=now,
            expires_at=None,
            digest=hashlib.sha256(b"x").hexdigest(),
            attestation=Attestation(
                key_id="k1", signature="0" * 64, decision=AttestedDecision.PLANNED
            ),
        )
        plain = notification.model_copy(update={"attestation": None})
        async with running_worker(client, config), attacker(client) as queue:
            posts = await attack(
                client,
                queue,
                [
                    Step(task_queue=task_queue, activity=NOTIFY_ACTIVITY, input=n.model_dump())
                    for n in (plain, notification)
                ],
            )
            # A real call still notifies: only the look-alike is refused.
            call = await start_call(
                client,
                task_queue,
                "calculator",
                {"expression": "1"},
                policy={"tools": {"calculator": "require_approval"}},
            )
            await pending_approval(call)
            for _ in range(100):
                if server.requests:
                    break
                await asyncio.sleep(0.05)
            await call.terminate("test over")
    for seen in posts:
        refused(seen, "notify: the deployment did not plan this call")
    assert [post.path for post in server.requests] == ["/hook"]
    assert b"evil.example" not in server.requests[0].body
