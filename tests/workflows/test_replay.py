"""Golden histories of every path replay against today's ToolCallWorkflow.

A change to the workflow's command sequence without ``workflow.patched`` breaks running calls;
these histories make such a change fail here first. Re-record with ``make record-histories``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker

from tests.record_histories import ATTESTED, EXPECTED_STATUS, HISTORIES
from tests.support.harness import history_types, make_config, start_call
from tests.support.tools import ALL_FAMILIES
from toolcalls.activities.runtime import ToolRuntime
from toolcalls.worker.config import build_catalog
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.call.decisions import IDENTITY_PATCH, RESPOND_PATCH
from toolcalls.workflows.call.grants_and_notices import FINISHED_NOTICE_PATCH
from toolcalls.workflows.call.parts import CANCELED_WRITE_PATCH
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.attest import ATTEST_PATCH
from toolcalls.workflows.models.call import (
    WORKFLOW_NAME,
    CallStatus,
    ErrorCode,
    EventKind,
    ToolCallRequest,
    ToolCallResult,
)


def _load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))


def _replayer(*workflows: type) -> Replayer:
    return Replayer(
        workflows=list(workflows or [ToolCallWorkflow]),
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    )


def test_every_path_has_a_recording() -> None:
    recorded = sorted(path.stem for path in HISTORIES.glob("*.json"))
    assert recorded == sorted(EXPECTED_STATUS)


@pytest.mark.parametrize("name", sorted(EXPECTED_STATUS))
async def test_history_replays(name: str) -> None:
    history = _load(HISTORIES / f"{name}.json")
    result = await _replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{name}: {result.replay_failure}"


@pytest.mark.parametrize("name", sorted(EXPECTED_STATUS))
def test_recording_ends_with_its_status(name: str) -> None:
    """The recordings really are the paths they are named after."""
    last = _load(HISTORIES / f"{name}.json").events[-1]
    payload = last.workflow_execution_completed_event_attributes.result.payloads[0]
    [result] = pydantic_data_converter.payload_converter.from_payloads([payload], [ToolCallResult])
    assert result.status.value == EXPECTED_STATUS[name]


def _markers(name: str) -> list[tuple[str, dict[str, bytes]]]:
    markers = []
    for event in _load(HISTORIES / f"{name}.json").events:
        if event.HasField("marker_recorded_event_attributes"):
            attributes = event.marker_recorded_event_attributes
            details = {key: value.payloads[0].data for key, value in attributes.details.items()}
            markers.append((attributes.marker_name, details))
    return markers


def _patches(name: str) -> list[str]:
    return [json.loads(d["patch-data"])["id"] for m, d in _markers(name) if m == "core_patch"]


def _result(name: str) -> ToolCallResult:
    last = _load(HISTORIES / f"{name}.json").events[-1]
    payload = last.workflow_execution_completed_event_attributes.result.payloads[0]
    [result] = pydantic_data_converter.payload_converter.from_payloads([payload], [ToolCallResult])
    assert isinstance(result, ToolCallResult)
    return result


@pytest.mark.parametrize("name", ATTESTED)
def test_attested_recordings_take_the_attested_path(name: str) -> None:
    """Recorded since approvals and grants are attested: the patch's marker, then the
    ``toolcalls.attest`` local activity, are in them."""
    markers = _markers(name)
    patches = _patches(name)
    attest = b'"activity_type":"toolcalls.attest"'
    assert patches == [ATTEST_PATCH]
    assert len([d for m, d in markers if attest in d.get("data", b"")]) == 1


def test_before_canonical_names_a_spelling_counted_as_a_second_approver() -> None:
    """The old path, which still replays: ``Alice`` after ``alice`` ran the call."""
    name = "identity_counted_twice_before_patch"
    assert IDENTITY_PATCH not in _patches(name)
    assert [r.approver for r in _result(name).approvals] == ["alice", "Alice"]


def test_with_canonical_names_a_spelling_is_the_same_approver() -> None:
    name = "identity_refused"
    assert IDENTITY_PATCH in _patches(name)
    result = _result(name)
    assert [r.approver for r in result.approvals] == ["alice", "bob"]
    ignored = [e.message for e in result.events if e.kind is EventKind.SIGNAL_IGNORED]
    assert ignored == [
        "approve from ALICE: 'alice' already approved this call",
        "approve from alice\u200b: 'alice\\u200b': a name cannot hold the invisible character "
        "U+200B (ZERO WIDTH SPACE)",
    ]


def test_a_response_in_place_of_the_tool_is_recorded_under_its_patch() -> None:
    """Recorded since approvers may answer in place of the tool: the patch's marker is there,
    the call ended ``responded`` with the answer, and no tool activity was scheduled."""
    name = "responded"
    assert RESPOND_PATCH in _patches(name)
    result = _result(name)
    assert result.error is not None
    assert result.error.code is ErrorCode.RESPONDED
    assert result.response == "The report is already in /srv/reports/q3.txt."
    assert result.approval is not None
    assert (result.approval.approver, result.approval.response) == ("carol", result.response)
    scheduled = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in _load(HISTORIES / f"{name}.json").events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
    assert "probe_write" not in scheduled


def test_a_write_canceled_while_it_ran_is_uncertain_under_its_patch() -> None:
    """``canceled`` was recorded before the patch: the same cancellation of a running write
    ended ``canceled`` and still replays so; ``canceled_write`` takes the new path."""
    assert CANCELED_WRITE_PATCH not in _patches("canceled")
    assert _result("canceled").status is CallStatus.CANCELED
    assert _patches("canceled_write") == [CANCELED_WRITE_PATCH]
    result = _result("canceled_write")
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert result.error.message == (
        "probe_sleep: canceled; the effect may have begun: inspect before calling again"
    )
    assert isinstance(result.output, dict)
    assert result.output["ticks"] >= 5


def test_a_canceled_write_that_undid_its_change_ends_canceled() -> None:
    """The same patch and commands as ``canceled_write``; the tool said it changed nothing."""
    assert _patches("canceled_write_undone") == [CANCELED_WRITE_PATCH]
    result = _result("canceled_write_undone")
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.code is ErrorCode.CANCELED
    assert result.error.message == "probe_sleep: canceled; undone, nothing was changed"
    assert isinstance(result.output, dict)
    assert result.output["changed"] is False


def test_a_finished_notice_is_recorded_under_its_patch() -> None:
    """Recorded since a request may name a ``notify`` webhook: the patch's marker, then the
    ``toolcalls.notify`` activity after the tool."""
    assert _patches("finished_notice") == [FINISHED_NOTICE_PATCH]
    history = _load(HISTORIES / "finished_notice.json")
    scheduled = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled[-1] == "toolcalls.notify"
    assert FINISHED_NOTICE_PATCH not in _patches("notified")


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class EditedWithoutPatch:
    """A 'new version' that sleeps before planning: a changed command sequence, no patch."""

    @workflow.run
    async def run(self, request: ToolCallRequest) -> ToolCallResult:
        await workflow.sleep(timedelta(seconds=1))
        raise RuntimeError("unreachable in replay")


async def test_edit_without_patch_is_nondeterministic() -> None:
    history = _load(HISTORIES / "allowed.json")
    result = await _replayer(EditedWithoutPatch).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is not None
    assert "nondetermin" in str(result.replay_failure).lower()


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class EditedWithPatch(ToolCallWorkflow):
    """The same edit, guarded by ``workflow.patched``: old histories take the old branch."""

    @workflow.run
    async def run(self, request: ToolCallRequest) -> ToolCallResult:
        if workflow.patched("sleep-before-planning"):
            await workflow.sleep(timedelta(milliseconds=10))
        return await super().run(request)


@pytest.mark.parametrize("name", ["allowed", "approved", "canceled"])
async def test_edit_with_patch_replays_old_histories(name: str) -> None:
    history = _load(HISTORIES / f"{name}.json")
    result = await _replayer(EditedWithPatch).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is None


async def test_edit_with_patch_takes_the_new_branch_in_new_runs(
    client: Client, task_queue: str
) -> None:
    runtime = ToolRuntime(build_catalog(make_config(task_queue), ALL_FAMILIES))
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[EditedWithPatch],
        activities=[
            *runtime.workflow_activities(["calculator"]),
            *runtime.tool_activities(["calculator"]),
        ],
    )
    async with worker:
        handle = await start_call(client, task_queue, "calculator", {"expression": "1 + 1"})
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    types = await history_types(handle)
    assert EventType.EVENT_TYPE_TIMER_STARTED in types
    # The patch, then the plan, which ran the calculator itself (one local activity).
    assert types.count(EventType.EVENT_TYPE_MARKER_RECORDED) == 2
