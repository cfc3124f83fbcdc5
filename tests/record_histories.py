"""Re-record the golden histories replayed by ``tests/workflows/test_replay.py``.

    make record-histories        (or: python -m tests.record_histories)

Each scenario runs one real call through ``ToolCallWorkflow`` on a fresh dev server and writes its
history to ``tests/histories/<scenario>.json``. Re-record only when a change to the workflow is
meant to change its command sequence for *new* runs, and keep the old files too (rename them) so
that running calls recorded with the old code keep replaying: that is what ``workflow.patched``
is for.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from tests.support.connections import PUBLIC_URL, TOOLS as CONNECTION_TOOLS, WEEK, running
from tests.support.harness import Handle, make_config, running_worker, start_call, wait_for
from tests.support.http_servers import serve, text
from tests.support.patches import without_patch
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.activities.connections import Tokens
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.devserver import temporal_binary
from toolcalls.workflows.call.decisions import IDENTITY_PATCH
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRequest,
    DecisionInput,
    EditProposal,
    GrantScope,
    GrantTerms,
)
from toolcalls.workflows.models.call import (
    SEARCH_ATTRIBUTES,
    CapabilityPolicy,
    Effect,
    EventKind,
    Phase,
)
from toolcalls.workflows.models.connection import CONNECTED_SIGNAL, ConnectedNotice
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.question import (
    UserAnswer,
)
from toolcalls.workflows.reach.client import ToolCallClient

HISTORIES = Path(__file__).parent / "histories"
PRIVATE = {"allow_private_address": True}

Scenario = Callable[[Client, str], Awaitable[Handle]]
CALCULATOR_NEEDS_APPROVAL = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})


async def allowed(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "calculator", {"expression": "2 ** 10"})


async def allowed_activity(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "probe_echo", {"text": "hello"})


async def policy_denied(client: Client, queue: str) -> Handle:
    return await start_call(
        client, queue, "probe_echo", {"text": "x"}, policy=CapabilityPolicy(default_effect="deny")
    )


async def approved(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_write", {"token": "t1"})
    state = await wait_for(handle, lambda s: s.pending_approval is not None)
    pending = state.pending_approval
    assert pending is not None
    await handle.execute_update(
        ToolCallWorkflow.decide,
        ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=True,
            approver="alice",
            reason="looks right",
        ),
    )
    return handle


async def approver_denied(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_write", {"token": "t2"})
    state = await wait_for(handle, lambda s: s.pending_approval is not None)
    pending = state.pending_approval
    assert pending is not None
    await handle.signal(
        ToolCallWorkflow.deny,
        DecisionInput(request_id=pending.request_id, digest=pending.digest, approver="bob"),
    )
    return handle


async def responded(client: Client, queue: str) -> Handle:
    """An approver answers in place of the tool (``toolcalls-respond-decision``)."""
    handle = await start_call(client, queue, "probe_write", {"token": "t3"})
    state = await wait_for(handle, lambda s: s.pending_approval is not None)
    pending = state.pending_approval
    assert pending is not None
    await handle.execute_update(
        ToolCallWorkflow.decide,
        ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=False,
            approver="carol",
            reason="already written",
            response="The report is already in /srv/reports/q3.txt.",
        ),
    )
    return handle


async def approval_timed_out(client: Client, queue: str) -> Handle:
    return await start_call(
        client,
        queue,
        "calculator",
        {"expression": "1 + 1"},
        policy=CALCULATOR_NEEDS_APPROVAL,
        approval_timeout=timedelta(seconds=1),
    )


async def _answer(client: Client, queue: str, text: str | None, *, signal: bool) -> Handle:
    handle = await start_call(
        client, queue, "ask_user", {"question": "Which format?", "options": ["JSON", "CSV"]}
    )
    state = await wait_for(handle, lambda s: s.pending_question is not None)
    assert state.pending_question is not None
    answer = UserAnswer(request_id=state.pending_question.request_id, answer=text, responder="u")
    if signal:
        await handle.signal(ToolCallWorkflow.answer_signal, answer)
    else:
        await handle.execute_update(ToolCallWorkflow.answer, answer)
    return handle


async def question_answered(client: Client, queue: str) -> Handle:
    return await _answer(client, queue, "CSV", signal=False)


async def question_declined(client: Client, queue: str) -> Handle:
    return await _answer(client, queue, None, signal=True)


async def canceled(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_sleep", {"seconds": 30})
    await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
    await asyncio.sleep(1)
    await handle.cancel()
    return handle


async def canceled_undone(client: Client, queue: str) -> Handle:
    """A write canceled while it ran that undid its change and says so (``changed: false``)."""
    handle = await start_call(client, queue, "probe_sleep", {"seconds": 30, "undo": True})
    await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
    await asyncio.sleep(1)
    await handle.cancel()
    return handle


async def tool_failure(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "calculator", {"expression": "1 / 0"})


async def unknown_tool(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "no_such_tool", {})


async def invalid_arguments(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "calculator", {"expression": "x + 1"})


async def timed_out(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "probe_slow_read", {"seconds": 3})


async def uncertain(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "probe_stall", {"seconds": 5})


async def uncertain_progress(client: Client, queue: str) -> Handle:
    """A write that heartbeats, lost at its deadline: the result carries its last heartbeat."""
    return await start_call(
        client, queue, "probe_sleep", {"seconds": 30}, timeout=timedelta(seconds=3)
    )


PROGRESS_SCRIPT = "echo one; echo two >&2; sleep 1; echo three"
"""Two batches of progress at least: lines, a pause longer than the publishing interval, a line."""


async def progress(client: Client, queue: str) -> Handle:
    """A command whose output is published as it runs (progress signals in history)."""
    return await start_call(client, queue, "run_shell", {"command": PROGRESS_SCRIPT})


async def _pending(handle: Handle) -> ApprovalRequest:
    state = await wait_for(handle, lambda s: s.pending_approval is not None)
    assert state.pending_approval is not None
    return state.pending_approval


def _decision(pending: ApprovalRequest, approver: str, **more: Any) -> ApprovalDecision:
    return ApprovalDecision(
        request_id=pending.request_id,
        digest=pending.digest,
        approved=True,
        approver=approver,
        **more,
    )


async def two_approvers(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_write", {"token": "two"})
    pending = await _pending(handle)
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, "alice"))
    await handle.signal(
        ToolCallWorkflow.approve,
        DecisionInput(request_id=pending.request_id, digest=pending.digest, approver="bob"),
    )
    return handle


async def edited(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_write", {"token": "draft"})
    pending = await _pending(handle)
    edit = _decision(pending, "alice", arguments={"token": "final"})
    await handle.execute_update(ToolCallWorkflow.decide, edit)
    return handle


EDIT_ROOT = Path(tempfile.gettempdir()) / "toolcalls-record-edit-refused"
"""Where ``edit_refused`` writes: ``root`` is the files family's one root."""


async def _refused(sent: Awaitable[Any]) -> None:
    try:
        await sent
    except WorkflowUpdateFailedError:
        return
    raise SystemExit("edit_refused: an edit outside the roots was accepted")


async def edit_refused(client: Client, queue: str) -> Handle:
    """Edits whose preview the tool refuses (outside the roots) by ``edit``, by ``decide`` and
    by signal: each refused, the original request waits on and is approved."""
    target = EDIT_ROOT / "root" / "notes.txt"
    handle = await start_call(
        client, queue, "create_file", {"path": str(target), "content": "original\n"}
    )
    pending = await _pending(handle)
    outside = {"path": str(EDIT_ROOT / "outside.txt"), "content": "edited\n"}
    proposal = EditProposal(
        request_id=pending.request_id, digest=pending.digest, editor="alice", arguments=outside
    )
    await _refused(handle.execute_update(ToolCallWorkflow.edit, proposal))
    edit = _decision(pending, "alice", arguments=outside)
    await _refused(handle.execute_update(ToolCallWorkflow.decide, edit))
    signal = DecisionInput(
        request_id=pending.request_id, digest=pending.digest, approver="bob", arguments=outside
    )
    await handle.signal(ToolCallWorkflow.approve, signal)
    await wait_for(handle, lambda s: [e.kind for e in s.events].count(EventKind.EDIT_REFUSED) == 3)
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, "bob"))
    return handle


async def escalated(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_write", {"token": "late"})
    pending = await _pending(handle)
    await wait_for(
        handle, lambda s: s.pending_approval is not None and s.pending_approval.escalated
    )
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, "carol"))
    return handle


async def granted(client: Client, queue: str) -> Handle:
    first = await start_call(client, queue, "probe_write", {"token": "g"})
    remember = GrantTerms(duration=timedelta(minutes=5), scope=GrantScope.DEPLOYMENT)
    await first.execute_update(
        ToolCallWorkflow.decide, _decision(await _pending(first), "alice", remember=remember)
    )
    result = await first.result()
    assert result.approval is not None
    grant_id = result.approval.grant_id
    calls = ToolCallClient(client, task_queue=queue)
    for _ in range(200):
        if any(grant.grant_id == grant_id for grant in await calls.grants()):
            break
        await asyncio.sleep(0.1)
    return await start_call(client, queue, "probe_write", {"token": "g"})


async def profiled(client: Client, queue: str) -> Handle:
    return await start_call(client, queue, "search_tools", {"query": "probe"}, profile="probes")


async def finished_notice(client: Client, queue: str) -> Handle:
    """A request that names a ``notify`` webhook: told how the call ended."""
    return await start_call(client, queue, "calculator", {"expression": "6 * 7"}, notify="ops")


async def notified(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_write", {"token": "n"})
    pending = await _pending(handle)
    await wait_for(handle, lambda s: any(e.kind is EventKind.NOTIFIED for e in s.events))
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, "alice"))
    return handle


async def _identities(client: Client, queue: str, second: str) -> Handle:
    """alice approves by update; ``second`` (a spelling of alice) by signal; then bob."""
    handle = await start_call(client, queue, "probe_write", {"token": "who"})
    pending = await _pending(handle)
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, "alice"))
    signal = DecisionInput(request_id=pending.request_id, digest=pending.digest, approver=second)
    await handle.signal(ToolCallWorkflow.approve, signal)
    return handle


async def identity_counted_twice_before_patch(client: Client, queue: str) -> Handle:
    """Before approver names were canonical: ``Alice`` after ``alice`` was a second approver."""
    return await _identities(client, queue, "Alice")


async def identity_refused(client: Client, queue: str) -> Handle:
    """``ALICE`` after ``alice`` is ignored as the same approver, ``alice`` with a zero-width
    space as an invalid name; `` Bob `` is the second approver, recorded as ``bob``."""
    handle = await _identities(client, queue, "ALICE")
    pending = await _pending(handle)
    signal = DecisionInput(
        request_id=pending.request_id, digest=pending.digest, approver="alice\u200b"
    )
    await handle.signal(ToolCallWorkflow.approve, signal)
    await wait_for(
        handle, lambda s: [e.kind for e in s.events].count(EventKind.SIGNAL_IGNORED) == 2
    )
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, " Bob "))
    return handle


CEDAR_FILE = Path(tempfile.gettempdir()) / "toolcalls-record-policies.cedar"
CEDAR = """@id("everyone")
permit(principal, action, resource);

@id("no-bob-writes")
forbid(principal == Principal::"bob", action == Action::"filesystem.write", resource);

@id("echo-needs-approval")
@approval("required")
permit(principal, action == Action::"probe_echo", resource);
"""
ALICE = Principal(id="alice", attributes={"tenant": "acme"})
CEDAR_SECTIONS = {"policies": [{"name": "main", "files": [str(CEDAR_FILE)]}]}


async def principal_approved(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_write", {"token": "p1"}, principal=ALICE)
    pending = await _pending(handle)
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, "carol"))
    return handle


async def cedar_approved(client: Client, queue: str) -> Handle:
    handle = await start_call(client, queue, "probe_echo", {"text": "c"}, principal=ALICE)
    pending = await _pending(handle)
    await handle.execute_update(ToolCallWorkflow.decide, _decision(pending, "carol"))
    return handle


async def cedar_denied(client: Client, queue: str) -> Handle:
    bob = Principal(id="bob")
    return await start_call(client, queue, "probe_write", {"token": "d"}, principal=bob)


async def quota_reserved(client: Client, queue: str) -> Handle:
    who = Principal(id=f"quota-{uuid.uuid4().hex[:8]}")
    return await start_call(client, queue, "calculator", {"expression": "1+1"}, principal=who)


async def quota_exceeded(client: Client, queue: str) -> Handle:
    """The second call of one principal against a quota of one."""
    who = Principal(id=f"quota-{uuid.uuid4().hex[:8]}")
    first = await start_call(client, queue, "calculator", {"expression": "1+1"}, principal=who)
    await first.result()
    return await start_call(client, queue, "calculator", {"expression": "2+2"}, principal=who)


async def quota_released(client: Client, queue: str) -> Handle:
    """A denied approval gives its unit back."""
    who = Principal(id=f"quota-{uuid.uuid4().hex[:8]}")
    handle = await start_call(client, queue, "probe_write", {"token": "q"}, principal=who)
    pending = await _pending(handle)
    denial = DecisionInput(request_id=pending.request_id, digest=pending.digest, approver="ann")
    await handle.signal(ToolCallWorkflow.deny, denial)
    return handle


CONNECTION_STATE = Path(tempfile.gettempdir()) / "toolcalls-record-connections"


def connection_sections(timeout: float = 3600) -> dict[str, Any]:
    """A calendar acting with each principal's Google account (replayed: FakeGoogle)."""
    provider = {"name": "google", "client_id": "recorder"}
    return {
        "tools": CONNECTION_TOOLS,
        "state_dir": str(CONNECTION_STATE),
        "calendar": {"backend": "google", "connection": "google"},
        "connections": {
            "public_url": PUBLIC_URL,
            "consent_timeout_seconds": timeout,
            "providers": [provider],
        },
    }


async def connection_awaited(client: Client, queue: str) -> Handle:
    """A call waits for its principal to connect, is told so, and acts with their token."""
    who = Principal(id=f"rec{uuid.uuid4().hex[:8]}")
    handle = await start_call(client, queue, "list_calendar_events", WEEK, principal=who)
    await wait_for(handle, lambda s: s.phase is Phase.AWAITING_CONNECTION)
    connections = deployment_connections(make_config(queue, **connection_sections()), os.environ)
    assert connections is not None
    connections.store.put("google", who.id, Tokens(f"at-{who.id}-1", None, None, ()))
    await handle.signal(CONNECTED_SIGNAL, ConnectedNotice(provider="google", principal=who.id))
    return handle


async def connection_timed_out(client: Client, queue: str) -> Handle:
    who = Principal(id=f"rec{uuid.uuid4().hex[:8]}")
    return await start_call(client, queue, "list_calendar_events", WEEK, principal=who)


QUOTA_SECTIONS = {
    "quotas": [{"name": "calls", "limit": 1, "window": "1h"}],
}
APPROVERS = {
    "groups": {"ops": ["alice", "bob"], "security": ["carol"]},
    "max_grant_seconds": 3600,
}
SECTIONS: dict[str, dict[str, Any]] = {
    "canceled": {"ceiling": {"default_effect": "allow"}},
    "canceled_write": {"ceiling": {"default_effect": "allow"}},
    "canceled_write_undone": {"ceiling": {"default_effect": "allow"}},
    "uncertain": {"ceiling": {"default_effect": "allow"}},
    "uncertain_progress": {"ceiling": {"default_effect": "allow"}},
    "progress": {
        "ceiling": {"default_effect": "allow"},
        "tools": [*ALL_TOOL_NAMES, "run_shell"],
        "shell": {"cwd": tempfile.gettempdir(), "env": {"PATH": "/usr/bin:/bin"}},
    },
    "two_approvers": {
        "approvers": {
            **APPROVERS,
            "rules": {"filesystem.write": {"approvers": ["ops"], "min_approvals": 2}},
        }
    },
    "edited": {"approvers": {**APPROVERS, "rules": {"filesystem.write": {"approvers": ["ops"]}}}},
    "edit_refused": {
        "tools": ["create_file"],
        "files": {
            "roots": [str(EDIT_ROOT / "root")],
            "checkpoints": str(EDIT_ROOT / "checkpoints.db"),
        },
    },
    "escalated": {
        "approvers": {
            **APPROVERS,
            "rules": {
                "filesystem.write": {
                    "approvers": ["ops"],
                    "remind_every_seconds": 0.5,
                    "escalate_after_seconds": 1.2,
                    "escalate_to": ["security"],
                }
            },
        }
    },
    "granted": {"approvers": APPROVERS},
    "cedar_approved": CEDAR_SECTIONS,
    "cedar_denied": CEDAR_SECTIONS,
    "quota_reserved": QUOTA_SECTIONS,
    "quota_exceeded": QUOTA_SECTIONS,
    "quota_released": QUOTA_SECTIONS,
    "connection_awaited": connection_sections(),
    "connection_timed_out": connection_sections(timeout=1),
    "identity_counted_twice_before_patch": {
        "approvers": {"rules": {"filesystem.write": {"min_approvals": 2}}}
    },
    "identity_refused": {"approvers": {"rules": {"filesystem.write": {"min_approvals": 2}}}},
    "profiled": {
        "tools": [*ALL_TOOL_NAMES, "search_tools", "read_tool"],
        "profiles": {"probes": {"tools": ["probes.*", "discovery.*"]}},
    },
}
"""The configuration sections a scenario's worker runs with (``notified`` adds its webhook)."""


SCENARIOS: dict[str, Scenario] = {
    "allowed": allowed,
    "allowed_activity": allowed_activity,
    "policy_denied": policy_denied,
    "approved": approved,
    "approver_denied": approver_denied,
    "approval_timed_out": approval_timed_out,
    "question_answered": question_answered,
    "question_declined": question_declined,
    "canceled": canceled,
    "tool_failure": tool_failure,
    "unknown_tool": unknown_tool,
    "invalid_arguments": invalid_arguments,
    "timed_out": timed_out,
    "uncertain": uncertain,
    "two_approvers": two_approvers,
    "edited": edited,
    "edit_refused": edit_refused,
    "escalated": escalated,
    "granted": granted,
    "notified": notified,
    "profiled": profiled,
    "ran_in_plan": allowed,
    "uncertain_progress": uncertain_progress,
    # Since approvals and grants are attested (``toolcalls-attested-decisions``).
    "attested_approved": approved,
    "attested_granted": granted,
    "attested_notified": notified,
    # Since approver names are canonical (``approver-identity-normalised``).
    "identity_counted_twice_before_patch": identity_counted_twice_before_patch,
    "identity_refused": identity_refused,
    # Since an approver may answer in place of the tool (``toolcalls-respond-decision``).
    "responded": responded,
    # Since requests name a principal and plans carry [[policies]] verdicts.
    "principal_approved": principal_approved,
    "cedar_approved": cedar_approved,
    "cedar_denied": cedar_denied,
    # Since [[quotas]] reserve units on ledger workflows.
    "quota_reserved": quota_reserved,
    "quota_exceeded": quota_exceeded,
    "quota_released": quota_released,
    # Since calls may wait for their principal to connect an account ([connections]).
    "connection_awaited": connection_awaited,
    "connection_timed_out": connection_timed_out,
    # Since a running tool publishes progress (a signal per batch, no command).
    "progress": progress,
    # Since a write canceled while it ran ends uncertain (``toolcalls-canceled-write-uncertain``).
    "canceled_write": canceled,
    # A write that undid its change when canceled ends canceled (same patch, no new command).
    "canceled_write_undone": canceled_undone,
    # Since a request may name a webhook told when the call ends (``toolcalls-finished-notice``).
    "finished_notice": finished_notice,
}
WITHOUT_PATCH = {"identity_counted_twice_before_patch": IDENTITY_PATCH}
"""Recordings of the path before a patch: their worker leaves that patch off, as old code did."""
ATTESTED = ("attested_approved", "attested_granted", "attested_notified")
"""The recordings made with attestations: they carry the patch's marker."""
EXPECTED_STATUS = {
    "allowed": "completed",
    "allowed_activity": "completed",
    "policy_denied": "denied",
    "approved": "completed",
    "approver_denied": "denied",
    "approval_timed_out": "denied",
    "question_answered": "completed",
    "question_declined": "completed",
    "canceled": "canceled",
    "tool_failure": "failed",
    "unknown_tool": "failed",
    "invalid_arguments": "failed",
    "timed_out": "timed_out",
    "uncertain": "uncertain",
    "two_approvers": "completed",
    "edited": "completed",
    "edit_refused": "completed",
    "escalated": "completed",
    "granted": "completed",
    "notified": "completed",
    "profiled": "completed",
    "ran_in_plan": "completed",
    "uncertain_progress": "uncertain",
    "attested_approved": "completed",
    "attested_granted": "completed",
    "attested_notified": "completed",
    "identity_counted_twice_before_patch": "completed",
    "identity_refused": "completed",
    "responded": "denied",
    "principal_approved": "completed",
    "cedar_approved": "completed",
    "cedar_denied": "denied",
    "quota_reserved": "completed",
    "quota_exceeded": "denied",
    "quota_released": "denied",
    "connection_awaited": "completed",
    "connection_timed_out": "denied",
    "progress": "completed",
    "canceled_write": "uncertain",
    "canceled_write_undone": "canceled",
    "finished_notice": "completed",
}
"""The status each recorded history ends with; the replay test checks the files against it."""


async def record(names: list[str]) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
    )
    HISTORIES.mkdir(exist_ok=True)
    CEDAR_FILE.write_text(CEDAR, encoding="utf-8")
    try:
        for name in names:
            queue = f"record-{uuid.uuid4()}"
            with serve({"/hook": text("ok")}) as receiver:
                sections = SECTIONS.get(name, SECTIONS.get(SCENARIOS[name].__name__, {}))
                if SCENARIOS[name] in (notified, finished_notice):
                    hook = {"name": "ops", "url": receiver.url("/hook")}
                    sections = {"notifications": {"webhooks": [hook | PRIVATE]}}
                if name == "edit_refused":
                    shutil.rmtree(EDIT_ROOT, ignore_errors=True)
                    (EDIT_ROOT / "root").mkdir(parents=True)
                client = env.client
                if name in WITHOUT_PATCH:
                    client = without_patch(client, WITHOUT_PATCH[name])
                config = make_config(queue, **sections)
                worker = running(client, config) if "connections" in sections else None
                async with worker or running_worker(client, config):
                    handle = await SCENARIOS[name](client, queue)
                    result = await asyncio.wait_for(handle.result(), 60)
            if result.status.value != EXPECTED_STATUS[name]:
                raise SystemExit(
                    f"{name}: ended {result.status.value}, not {EXPECTED_STATUS[name]}"
                )
            history = await handle.fetch_history()
            (HISTORIES / f"{name}.json").write_text(history.to_json() + "\n", encoding="utf-8")
            print(f"{name}: {result.status.value}, {len(history.events)} events", flush=True)
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
