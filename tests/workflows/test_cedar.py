"""Cedar policy sets through real workflows and a real ``cedarpy``: permit, forbid, approval
annotations, shadow mode, evaluation errors, principals bound into grants, and a worker that
refuses a policy file it cannot parse."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
    update_rejection,
)
from tests.support.parents import AgentParent, ParentInput
from tests.support.tools import ALL_FAMILIES
from tests.workflows.test_parent import parent_worker
from toolcalls.worker.config import ConfigError
from toolcalls.worker.run import build_worker
from toolcalls.workflows.models.approval import GrantScope, GrantTerms
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, ToolCallRequest
from toolcalls.workflows.models.principal import Principal

ALICE = Principal(id="alice", attributes={"tenant": "acme"})
BOB = Principal(id="bob", attributes={"tenant": "other"})

BASE = """
@id("everyone")
permit(principal, action, resource);

@id("no-bob-writes")
forbid(principal == Principal::"bob", action == Action::"filesystem.write", resource);

@id("other-tenant-needs-approval")
@approval("required")
permit(principal, action == Action::"probe_echo", resource)
when { principal has tenant && principal.tenant == "other" };
"""


def config(task_queue: str, tmp_path: Path, text: str = BASE, **more: Any) -> Any:
    path = tmp_path / f"{task_queue}.cedar"
    path.write_text(text)
    sets = more.pop("sets", None) or [{"name": "main", "files": [str(path)]}]
    return make_config(
        task_queue,
        ceiling={"default_effect": "allow"},
        policies=sets,
        **more,
    )


async def test_permit_forbid_and_the_approval_annotation(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with running_worker(client, config(task_queue, tmp_path)) as probes:
        allowed = await run_call(client, task_queue, "probe_write", {"token": "a"}, principal=ALICE)
        assert allowed.status is CallStatus.COMPLETED, allowed.error
        assert allowed.principal == "alice"

        denied = await run_call(client, task_queue, "probe_write", {"token": "b"}, principal=BOB)
        assert denied.status is CallStatus.DENIED
        assert denied.error is not None
        assert denied.error.code is ErrorCode.POLICY_DENIED
        assert "no-bob-writes" in denied.error.message
        assert probes.runs.get("probe_write") == 1

        handle = await start_call(client, task_queue, "probe_echo", {"text": "hi"}, principal=BOB)
        pending = await pending_approval(handle)
        assert pending.principal == BOB
        assert any("other-tenant-needs-approval" in reason for reason in pending.reasons)
        await handle.execute_update("decide", decision(pending))
        echoed = await asyncio.wait_for(handle.result(), 30)
        assert echoed.status is CallStatus.COMPLETED

        # Without a principal Cedar sees Principal::"anonymous": permitted, no approval.
        anonymous = await run_call(client, task_queue, "probe_echo", {"text": "hi"})
        assert anonymous.status is CallStatus.COMPLETED


async def test_the_approvers_annotation_narrows_who_may_decide(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    text = '@id("ops-decide")\n@approvers("ops")\npermit(principal, action, resource);\n'
    cfg = config(task_queue, tmp_path, text, approvers={"groups": {"ops": ["carol"]}})
    async with running_worker(client, cfg):
        handle = await start_call(client, task_queue, "probe_echo", {"text": "x"}, principal=ALICE)
        pending = await pending_approval(handle)
        assert pending.approvers == ["carol"]
        refused = await update_rejection(handle, "decide", decision(pending, approver="dave"))
        assert "dave" in refused
        await handle.execute_update("decide", decision(pending, approver="carol"))
        result = await asyncio.wait_for(handle.result(), 30)
        assert result.status is CallStatus.COMPLETED
        assert result.approval is not None
        assert result.approval.approver == "carol"


async def test_an_evaluation_error_denies(client: Client, task_queue: str, tmp_path: Path) -> None:
    # ``principal.tenant`` on a principal without one is an error: the call is denied, not the
    # forbid skipped.
    text = (
        "permit(principal, action, resource);\n"
        '@id("tenant-check")\n'
        'forbid(principal, action, resource) when { principal.tenant == "evil" };\n'
    )
    async with running_worker(client, config(task_queue, tmp_path, text)) as probes:
        result = await run_call(
            client, task_queue, "probe_echo", {"text": "x"}, principal=Principal(id="zed")
        )
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.POLICY_DENIED
    assert "evaluation error" in result.error.message
    assert "probe_echo" not in probes.runs


async def test_shadow_mode_records_a_disagreement_without_enforcing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    enforced = tmp_path / "enforced.cedar"
    enforced.write_text("permit(principal, action, resource);\n")
    shadow = tmp_path / "shadow.cedar"
    shadow.write_text(
        'permit(principal, action, resource);\n@id("no-writes")\n'
        'forbid(principal, action == Action::"filesystem.write", resource);\n'
    )
    sets = [
        {"name": "current", "files": [str(enforced)]},
        {"name": "next", "files": [str(shadow)], "mode": "shadow"},
    ]
    async with running_worker(client, config(task_queue, tmp_path, sets=sets)) as probes:
        result = await run_call(client, task_queue, "probe_write", {"token": "s"}, principal=ALICE)
        agreed = await run_call(client, task_queue, "probe_echo", {"text": "s"}, principal=ALICE)
    assert result.status is CallStatus.COMPLETED
    assert probes.runs["probe_write"] == 1
    disagreements = [e for e in result.events if e.kind is EventKind.SHADOW_DISAGREED]
    assert len(disagreements) == 1
    assert "next would decide deny, not allow" in disagreements[0].message
    assert not [e for e in agreed.events if e.kind is EventKind.SHADOW_DISAGREED]


async def test_a_grant_for_alice_does_not_approve_bob(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    text = '@approval("required")\npermit(principal, action, resource);\n'
    cfg = config(task_queue, tmp_path, text, approvers={"max_grant_seconds": 3600})
    async with running_worker(client, cfg):
        first = await start_call(client, task_queue, "probe_echo", {"text": "g"}, principal=ALICE)
        pending = await pending_approval(first)
        remember = GrantTerms(duration=3600, scope=GrantScope.DEPLOYMENT)
        await first.execute_update("decide", decision(pending, remember=remember))
        assert (await asyncio.wait_for(first.result(), 30)).status is CallStatus.COMPLETED

        again = await run_call(client, task_queue, "probe_echo", {"text": "g"}, principal=ALICE)
        assert again.approval is not None
        assert again.approval.via == "grant"

        bobs = await start_call(client, task_queue, "probe_echo", {"text": "g"}, principal=BOB)
        waiting = await pending_approval(bobs)
        assert waiting.principal == BOB
        await bobs.cancel()


def test_a_policy_that_does_not_parse_stops_the_worker_with_its_place(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    text = (
        "permit(principal, action, resource);\n\n"
        'permit(principal, action, resource)\n  when { resource.path lik "/a" };\n'
    )
    cfg = config(task_queue, tmp_path, text)
    with pytest.raises(ConfigError, match=r"\.cedar:4:\d+: unexpected token `lik`"):
        build_worker(client, cfg, families=ALL_FAMILIES)


def test_a_policy_the_schema_refuses_stops_the_worker(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    schema = tmp_path / "schema.cedarschema"
    schema.write_text(
        "entity Principal { tenant?: String };\nentity Tool { side_effect: String };\n"
        'action "probe_echo" appliesTo { principal: Principal, resource: Tool, context: {} };\n'
    )
    policy = tmp_path / "p.cedar"
    policy.write_text(
        "permit(principal, action, resource);\n\n"
        'permit(principal, action == Action::"probe_echo", resource)\n'
        "  when { resource.nope == 1 };\n"
    )
    sets = [{"name": "main", "files": [str(policy)], "schema": str(schema)}]
    cfg = config(task_queue, tmp_path, sets=sets)
    with pytest.raises(ConfigError, match=r"p\.cedar:3:1: .*nope"):
        build_worker(client, cfg, families=ALL_FAMILIES)


async def test_a_policy_changed_after_the_plan_affects_only_new_calls(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    path = tmp_path / "changing.cedar"
    path.write_text('@approval("required")\npermit(principal, action, resource);\n')
    sets = [{"name": "main", "files": [str(path)]}]
    cfg = config(task_queue, tmp_path, sets=sets)
    async with running_worker(client, cfg):
        handle = await start_call(client, task_queue, "probe_echo", {"text": "p"}, principal=ALICE)
        pending = await pending_approval(handle)
    path.write_text('@id("nothing")\nforbid(principal, action, resource);\n')
    # A new worker, with the new policy: the waiting call replays its recorded plan there.
    async with running_worker(client, config(task_queue, tmp_path, sets=sets)) as probes:
        await handle.execute_update("decide", decision(pending))
        result = await asyncio.wait_for(handle.result(), 30)
        assert result.status is CallStatus.COMPLETED
        assert probes.runs["probe_echo"] == 1
        later = await run_call(client, task_queue, "probe_echo", {"text": "p"}, principal=ALICE)
    assert later.status is CallStatus.DENIED
    assert later.error is not None
    assert "nothing" in later.error.message


async def test_each_decision_is_logged_once_without_argument_values(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with running_worker(client, config(task_queue, tmp_path)):
        result = await run_call(
            client, task_queue, "probe_write", {"token": "very-secret"}, principal=BOB
        )
    assert result.status is CallStatus.DENIED
    logged = [r for r in caplog.records if getattr(r, "decision", None) is not None]
    assert len(logged) == 1
    record = logged[0]
    assert (record.decision, record.principal, record.tool) == ("deny", "bob", "probe_write")  # type: ignore[attr-defined]
    assert record.digest == result.digest  # type: ignore[attr-defined]
    assert any("no-bob-writes" in rule for rule in record.rules)  # type: ignore[attr-defined]
    assert "very-secret" not in record.getMessage()
    assert "very-secret" not in repr(record.__dict__)


@pytest.mark.parametrize("inline", [False, True])
async def test_a_parent_names_the_principal_and_the_policy_sees_the_parent(
    client: Client, task_queue: str, tmp_path: Path, inline: bool
) -> None:
    text = (
        'permit(principal, action, resource);\n@id("no-echo-from-parents")\n'
        'forbid(principal, action == Action::"probe_echo", resource) when { context has parent };\n'
    )
    batch = [
        ToolCallRequest(tool="probe_write", arguments={"token": "w"}, call_id="w"),
        ToolCallRequest(tool="probe_echo", arguments={"text": "e"}, call_id="e"),
    ]
    async with (
        running_worker(client, config(task_queue, tmp_path, text)),
        parent_worker(client) as queue,
    ):
        parent = await client.start_workflow(
            AgentParent.run,
            ParentInput(task_queue=task_queue, batches=[batch], principal=ALICE, inline=inline),
            id=f"parent-{uuid.uuid4()}",
            task_queue=queue,
        )
        output = await asyncio.wait_for(parent.result(), 30)
    wrote, echoed = output.results
    assert wrote.status is CallStatus.COMPLETED, wrote.error
    assert wrote.principal == "alice"
    assert echoed.status is CallStatus.DENIED
    assert echoed.error is not None
    assert "no-echo-from-parents" in echoed.error.message
