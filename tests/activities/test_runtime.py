"""The runtime guard on every tool activity, exercised through real workflows on a real server.

The workflows here are stand-ins that call tool activities directly, as a buggy or hostile caller
would: ``ForeignWorkflow`` is not ``ToolCallWorkflow`` at all, and ``ImpostorToolCallWorkflow``
carries the name ``ToolCallWorkflow`` but none of its checks, so only the activities' own guard
stands between the input it sends and the tool. Where a test needs a call the deployment did
attest (to reach the guard's later checks), the stand-in first asks ``VOUCH``, an activity of the
test's worker that signs with the runtime's own keys, as the deployment's workflow would have.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel, Field
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from tests.support.payloads import keys
from tests.support.tools import (
    ALL_TOOL_NAMES,
    ALL_TOOLS,
    EchoArgs,
    EchoResult,
    ProbeTools,
    SleepResult,
    WriteArgs,
)
from toolcalls.activities.attestations import Claim, Run
from toolcalls.activities.base import CallContext
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES
from toolcalls.activities.runtime import ToolRuntime
from toolcalls.worker.payloads.codec import EncryptionCodec
from toolcalls.worker.payloads.keys import parse_keys
from toolcalls.workflows.models.approval import ApprovalRecord, Prepared, PreviewArtifact
from toolcalls.workflows.models.attest import Attestation, AttestedDecision, AttestInput
from toolcalls.workflows.models.call import (
    WORKFLOW_NAME,
    CapabilityPolicy,
    Effect,
    ExecuteInput,
    PlanInput,
    prepare_activity_name,
)

PREPARE_WRITE = prepare_activity_name("probe_write")
WRONG_TYPE = "return the wrong type"
BIG_PREVIEW = "big preview"
FOREIGN = "ForeignWorkflow"


VOUCH = "test.vouch"


class Attempt(BaseModel):
    activity: str
    input: ExecuteInput
    vouch: AttestInput | None = None
    """Have the deployment's keys attest this for the run first (``VOUCH``)."""


class Outcome(BaseModel):
    output: Any = None
    error_type: str | None = None
    message: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


async def _attempt(attempt: Attempt) -> Outcome:
    sent = attempt.input
    if attempt.vouch is not None:
        attestation = await workflow.execute_activity(
            VOUCH,
            attempt.vouch,
            result_type=Attestation,
            start_to_close_timeout=timedelta(seconds=20),
        )
        sent = sent.model_copy(update={"attestation": attestation})
    try:
        output = await workflow.execute_activity(
            attempt.activity,
            sent,
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
    except ActivityError as err:
        cause = err.cause
        if not isinstance(cause, ApplicationError):
            return Outcome(error_type=type(cause).__name__, message=str(cause))
        first = cause.details[0] if cause.details else {}
        details = first if isinstance(first, dict) else {}
        return Outcome(error_type=cause.type, message=cause.message, details=details)
    return Outcome(output=output)


@workflow.defn(name=FOREIGN)
class ForeignWorkflow:
    @workflow.run
    async def run(self, attempt: Attempt) -> Outcome:
        return await _attempt(attempt)


@workflow.defn(name=WORKFLOW_NAME)
class ImpostorToolCallWorkflow:
    @workflow.run
    async def run(self, attempt: Attempt) -> Outcome:
        return await _attempt(attempt)


class CountingProbes(ProbeTools):
    """The probe tools, also counting ``prepare`` runs and able to misbehave on request."""

    async def prepare_probe_write(self, args: WriteArgs, call: CallContext) -> Prepared:
        self._count(PREPARE_WRITE)
        if args.token == BIG_PREVIEW:
            text = "+" + "x" * MAX_PAYLOAD_BYTES
            return Prepared(preview=[PreviewArtifact(kind="diff", title="huge", text=text)])
        return await super().prepare_probe_write(args, call)

    async def probe_echo(self, args: EchoArgs, call: CallContext) -> EchoResult:
        if args.text == WRONG_TYPE:
            self._count("probe_echo")
            return SleepResult(ticks=0)  # type: ignore[return-value]
        return await super().probe_echo(args, call)


CATALOG = Catalog(ALL_TOOLS, CatalogSettings(enabled=ALL_TOOL_NAMES))
ALLOW_ALL = CapabilityPolicy(default_effect=Effect.ALLOW)


@asynccontextmanager
async def tool_worker(
    client: Client, task_queue: str, ceiling: CapabilityPolicy | None = None, **options: Any
) -> AsyncIterator[CountingProbes]:
    """Every probe tool's activities behind the runtime guard, plus the stand-in workflows;
    ``options`` go to ``ToolRuntime`` (``result_bytes``, ``codec``)."""
    probes = CountingProbes()
    runtime = ToolRuntime(CATALOG, ceiling, instances={ProbeTools: probes}, **options)

    @activity.defn(name=VOUCH)
    async def vouch(claim: AttestInput) -> Attestation:
        run = Run.of(activity.info())
        assert run is not None
        return runtime.attestor.issue(
            run,
            Claim(
                claim.call_id,
                claim.digest,
                claim.visible_tools,
                claim.decision,
                claim.approver,
                claim.expires_at,
            ),
        )

    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[ForeignWorkflow, ImpostorToolCallWorkflow],
        activities=[*runtime.tool_activities(), vouch],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        yield probes


def planned(
    tool: str, arguments: dict[str, Any], *, approval: ApprovalRecord | None = None
) -> ExecuteInput:
    """The input ``ToolCallWorkflow`` would send for this call, as the catalog plans it."""
    outcome = CATALOG.plan(PlanInput(tool=tool, arguments=arguments), ALLOW_ALL, frozenset())
    assert outcome.plan is not None, outcome.error
    precondition = {"token": arguments["token"]} if tool == "probe_write" else None
    return ExecuteInput(
        tool=tool,
        arguments=outcome.plan.arguments,
        digest=outcome.plan.digest,
        call_id="call-1",
        idempotency_key="wf:call-1",
        approval=approval,
        precondition=precondition,
    )


def approval(digest: str, *, approved: bool = True) -> ApprovalRecord:
    return ApprovalRecord(
        request_id="req-1",
        digest=digest,
        approved=approved,
        approver="alice",
        reason=None,
        decided_at=datetime.now(UTC),
        via="update",
    )


AUTO = "auto"


def vouched(input: ExecuteInput) -> AttestInput:
    """What ``ToolCallWorkflow`` would have had attested for ``input``: its approval, if it
    carries one, else its plan."""
    approval = input.approval
    decision = AttestedDecision.PLANNED
    if approval is not None and approval.approved:
        decision = AttestedDecision.APPROVED
    return AttestInput(
        call_id=input.call_id,
        digest=input.digest,
        visible_tools=input.visible_tools,
        decision=decision,
        approver=approval.approver if decision is AttestedDecision.APPROVED and approval else None,
    )


async def attempt(
    client: Client,
    task_queue: str,
    input: ExecuteInput,
    *,
    activity: str | None = None,
    workflow_type: str = WORKFLOW_NAME,
    vouch: AttestInput | str | None = AUTO,
) -> Outcome:
    """Run ``input`` through a stand-in workflow; by default attested as ``vouched`` says."""
    claim = vouched(input) if vouch == AUTO else vouch
    assert not isinstance(claim, str)
    outcome: Outcome = await client.execute_workflow(
        workflow_type,
        Attempt(activity=activity or input.tool, input=input, vouch=claim),
        result_type=Outcome,
        id=f"runtime-{uuid.uuid4()}",
        task_queue=task_queue,
        execution_timeout=timedelta(seconds=60),
    )
    return outcome


NOT_ATTESTED = "the deployment did not plan this call: it carries no attestation of the deployment"


async def test_a_tool_runs_only_what_the_deployment_attested(
    client: Client, task_queue: str
) -> None:
    echo = planned("probe_echo", {"text": "hi"})
    write = planned("probe_write", {"token": "t"})
    async with tool_worker(client, task_queue, ALLOW_ALL) as probes:
        # A workflow named ToolCallWorkflow proves nothing: without the deployment's word on the
        # call, nothing runs, prepare included.
        impostor = await attempt(client, task_queue, echo, vouch=None)
        impostor_prepare = await attempt(
            client, task_queue, write, activity=PREPARE_WRITE, vouch=None
        )
        foreign = await attempt(client, task_queue, echo, workflow_type=FOREIGN, vouch=None)
        # A grant's attestation is not a call's.
        grant = vouched(echo).model_copy(update={"decision": AttestedDecision.GRANT})
        as_grant = await attempt(client, task_queue, echo, vouch=grant)
        assert probes.runs == {}
        same = await attempt(client, task_queue, echo)
    for refused, tool in (
        (impostor, "probe_echo"),
        (impostor_prepare, "probe_write"),
        (foreign, "probe_echo"),
    ):
        assert refused.error_type == "policy_denied"
        assert refused.message == f"{tool}: {NOT_ATTESTED}"
    assert as_grant.error_type == "policy_denied"
    assert as_grant.message == (
        "probe_echo: the deployment did not plan this call: its attestation is of a grant, "
        "not of a call"
    )
    assert same.error_type is None
    assert same.output == {"text": "hi"}
    assert probes.runs == {"probe_echo": 1}


async def test_an_approval_counts_only_as_the_deployment_attested_it(
    client: Client, task_queue: str
) -> None:
    write = planned("probe_write", {"token": "t"})
    approved = write.model_copy(update={"approval": approval(write.digest)})
    required = (
        "probe_write: the deployment requires an approval for this call "
        "(filesystem.write: require_approval (deployment rule filesystem.write))"
    )
    async with tool_worker(client, task_queue, default_ceiling()) as probes:
        # A made-up approval on an attested plan: the plan is genuine, the approval is not.
        made_up = await attempt(client, task_queue, approved, vouch=vouched(write))
        # The deployment attested an approval, but by someone else than the record names.
        other = vouched(approved).model_copy(update={"approver": "mallory"})
        someone_else = await attempt(client, task_queue, approved, vouch=other)
        assert probes.runs == {}
        ran = await attempt(client, task_queue, approved)
    for refused in (made_up, someone_else):
        assert refused.error_type == "policy_denied"
        assert refused.message == required
    assert ran.error_type is None
    assert probes.runs == {"probe_write": 1}


@pytest.mark.parametrize(
    ("tamper", "activity"),
    [
        pytest.param({"digest": "0" * 64}, "probe_echo", id="wrong-digest"),
        pytest.param({"arguments": {"text": "bye", "size": 0}}, "probe_echo", id="tampered"),
        pytest.param({"arguments": {"text": "hi", "size": 5}}, "probe_echo", id="added-size"),
        pytest.param({"tool": "probe_boom"}, "probe_echo", id="other-tool-name"),
        pytest.param({}, "probe_boom", id="sent-to-another-tool"),
    ],
)
async def test_arguments_must_match_the_digest(
    client: Client, task_queue: str, tamper: dict[str, Any], activity: str
) -> None:
    echo = planned("probe_echo", {"text": "hi"}).model_copy(update=tamper)
    async with tool_worker(client, task_queue, ALLOW_ALL) as probes:
        refused = await attempt(client, task_queue, echo, activity=activity)
    assert refused.error_type == "policy_denied"
    assert refused.message == f"{activity}: arguments do not match the call's digest"
    assert probes.runs == {}


async def test_digest_binds_meaning_not_spelling(client: Client, task_queue: str) -> None:
    echo = planned("probe_echo", {"text": "hi"})
    assert echo.arguments == {"text": "hi", "size": 0}
    respelled = echo.model_copy(update={"arguments": {"size": None, "text": "hi"}})
    async with tool_worker(client, task_queue, ALLOW_ALL) as probes:
        ran = await attempt(client, task_queue, respelled)
    assert ran.output == {"text": "hi"}
    assert probes.runs == {"probe_echo": 1}


@pytest.mark.parametrize(
    "approval_for",
    [
        pytest.param(lambda digest: None, id="no-approval"),
        pytest.param(lambda digest: approval(digest, approved=False), id="denied"),
        pytest.param(lambda digest: approval("f" * 64), id="other-digest"),
    ],
)
async def test_ceiling_approval_must_be_granted_for_this_digest(
    client: Client, task_queue: str, approval_for: Any
) -> None:
    write = planned("probe_write", {"token": "t"})
    write = write.model_copy(update={"approval": approval_for(write.digest)})
    async with tool_worker(client, task_queue, default_ceiling()) as probes:
        refused = await attempt(client, task_queue, write)
    assert refused.error_type == "policy_denied"
    assert refused.message == (
        "probe_write: the deployment requires an approval for this call "
        "(filesystem.write: require_approval (deployment rule filesystem.write))"
    )
    assert probes.runs == {}


async def test_matching_approval_lets_the_call_run(client: Client, task_queue: str) -> None:
    write = planned("probe_write", {"token": "t"})
    async with tool_worker(client, task_queue, default_ceiling()) as probes:
        # Preparing the preview needs no approval: it is what the human approves.
        prepared = await attempt(client, task_queue, write, activity=PREPARE_WRITE)
        ran = await attempt(
            client, task_queue, write.model_copy(update={"approval": approval(write.digest)})
        )
    assert prepared.error_type is None
    assert prepared.output["precondition"] == {"token": "t"}
    assert ran.error_type is None
    assert ran.output == {"token": "t", "idempotency_key": "wf:call-1", "approved_by": "alice"}
    assert probes.runs == {PREPARE_WRITE: 1, "probe_write": 1}


async def test_ceiling_tools_entry_is_enforced_too(client: Client, task_queue: str) -> None:
    ceiling = CapabilityPolicy(tools={"probe_echo": Effect.REQUIRE_APPROVAL})
    echo = planned("probe_echo", {"text": "hi"})
    async with tool_worker(client, task_queue, ceiling) as probes:
        refused = await attempt(client, task_queue, echo)
        assert probes.runs == {}
        ran = await attempt(
            client, task_queue, echo.model_copy(update={"approval": approval(echo.digest)})
        )
    assert refused.error_type == "policy_denied"
    assert "tool:probe_echo: require_approval (deployment rule tool:probe_echo)" in (
        refused.message
    )
    assert ran.output == {"text": "hi"}
    assert probes.runs == {"probe_echo": 1}


async def test_ceiling_allow_needs_no_approval(client: Client, task_queue: str) -> None:
    async with tool_worker(client, task_queue, ALLOW_ALL) as probes:
        ran = await attempt(client, task_queue, planned("probe_write", {"token": "t"}))
    assert ran.output == {"token": "t", "idempotency_key": "wf:call-1", "approved_by": None}
    assert probes.runs == {"probe_write": 1}


async def test_ceiling_deny_refuses_prepare_and_execute(client: Client, task_queue: str) -> None:
    ceiling = CapabilityPolicy(rules={"filesystem.*": Effect.DENY})
    write = planned("probe_write", {"token": "t"})
    approved = write.model_copy(update={"approval": approval(write.digest)})
    async with tool_worker(client, task_queue, ceiling) as probes:
        prepare = await attempt(client, task_queue, write, activity=PREPARE_WRITE)
        execute = await attempt(client, task_queue, approved)
    reason = "filesystem.write: deny (deployment rule filesystem.*)"
    for refused in (prepare, execute):
        assert refused.error_type == "policy_denied"
        assert refused.message == f"probe_write: denied by the deployment: {reason}"
    assert probes.runs == {}


def test_ceiling_decisions_are_kept_per_ceiling() -> None:
    runtime = ToolRuntime(CATALOG, ALLOW_ALL)
    capabilities = ["filesystem.write"]
    first = runtime._ceiling_decision("probe_write", capabilities)
    assert first.effect is Effect.ALLOW
    assert runtime._ceiling_decision("probe_write", capabilities) is first
    runtime.ceiling = CapabilityPolicy(rules={"filesystem.*": Effect.DENY})
    assert runtime._ceiling_decision("probe_write", capabilities).effect is Effect.DENY


async def test_result_over_the_payload_cap(client: Client, task_queue: str) -> None:
    # EchoResult's JSON is '{"text":"..."}': 11 bytes around the text.
    at_cap = planned("probe_echo", {"size": MAX_PAYLOAD_BYTES - 11})
    over_cap = planned("probe_echo", {"size": MAX_PAYLOAD_BYTES - 10})
    async with tool_worker(client, task_queue, ALLOW_ALL) as probes:
        fits = await attempt(client, task_queue, at_cap)
        too_large = await attempt(client, task_queue, over_cap)
    assert fits.error_type is None
    assert len(fits.output["text"]) == MAX_PAYLOAD_BYTES - 11
    assert too_large.error_type == "output_too_large"
    assert too_large.message == (
        f"probe_echo: result is {MAX_PAYLOAD_BYTES + 1} bytes; the limit is {MAX_PAYLOAD_BYTES}"
    )
    # The tool ran both times; only the oversized result was kept from leaving the worker.
    assert probes.runs == {"probe_echo": 2}


async def test_the_cap_measures_the_payload_after_the_codec(
    client: Client, task_queue: str
) -> None:
    keyring = parse_keys(keys("k1"), "test")
    big = planned("probe_echo", {"size": MAX_PAYLOAD_BYTES + MAX_PAYLOAD_BYTES // 2})
    at_plain_cap = planned("probe_echo", {"size": MAX_PAYLOAD_BYTES - 11})
    # Compressed, a result of 1.5 MiB of one repeated byte is a few kilobytes: it leaves.
    squeezed = EncryptionCodec(keyring, compress=True)
    async with tool_worker(client, task_queue, ALLOW_ALL, codec=squeezed):
        fits = await attempt(client, task_queue, big)
    assert fits.error_type is None, fits.message
    # Encrypted, a result at the plain cap grows past it (nonce, tag, the inner metadata).
    async with tool_worker(client, task_queue, ALLOW_ALL, codec=EncryptionCodec(keyring)):
        grown = await attempt(client, task_queue, at_plain_cap)
    assert grown.error_type == "output_too_large"
    size = int(grown.message.split(" bytes;")[0].rsplit(" ", 1)[1])
    assert MAX_PAYLOAD_BYTES < size < MAX_PAYLOAD_BYTES + 100
    # A raised limit (a deployment with a payload store) admits what 1 MiB would not.
    async with tool_worker(client, task_queue, ALLOW_ALL, result_bytes=2 * MAX_PAYLOAD_BYTES):
        raised = await attempt(client, task_queue, planned("probe_echo", {"size": 1_500_000}))
    assert raised.error_type is None, raised.message
    assert len(raised.output["text"]) == 1_500_000


async def test_preview_over_the_payload_cap(client: Client, task_queue: str) -> None:
    write = planned("probe_write", {"token": BIG_PREVIEW})
    async with tool_worker(client, task_queue) as probes:
        too_large = await attempt(client, task_queue, write, activity=PREPARE_WRITE)
    assert too_large.error_type == "output_too_large"
    assert too_large.message.startswith("probe_write: preview is ")
    assert too_large.message.endswith(f" bytes; the limit is {MAX_PAYLOAD_BYTES}")
    assert probes.runs == {PREPARE_WRITE: 1}


async def test_wrong_result_type_is_internal(client: Client, task_queue: str) -> None:
    async with tool_worker(client, task_queue, ALLOW_ALL) as probes:
        wrong = await attempt(client, task_queue, planned("probe_echo", {"text": WRONG_TYPE}))
    assert wrong.error_type == "internal"
    assert wrong.message == "probe_echo: returned the wrong result type"
    assert probes.runs == {"probe_echo": 1}


@pytest.mark.parametrize(
    ("arguments", "fixable"),
    [
        pytest.param({"text": 5, "size": -1}, ["text", "size"], id="bad-values"),
        pytest.param({"text": "hi", "size": 0, "shell": "rm"}, ["shell"], id="extra-key"),
    ],
)
async def test_invalid_arguments_at_execute_time(
    client: Client, task_queue: str, arguments: dict[str, Any], fixable: list[str]
) -> None:
    bad = planned("probe_echo", {"text": "hi"}).model_copy(update={"arguments": arguments})
    async with tool_worker(client, task_queue, ALLOW_ALL) as probes:
        refused = await attempt(client, task_queue, bad)
    assert refused.error_type == "invalid_arguments"
    assert refused.message.startswith("probe_echo: invalid arguments: ")
    assert refused.details["fixable_args"] == fixable
    assert probes.runs == {}
