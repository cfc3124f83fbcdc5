"""The MCP front's pure parts: annotations, output schemas, workflow ids, results and forms."""

from __future__ import annotations

from datetime import UTC, datetime

import mcp_types as types
import pytest
from jsonschema.validators import validator_for
from mcp.shared.exceptions import MCPError

from toolcalls.activities.families import BUILTIN_TOOLS
from toolcalls.worker.arguments import default_approver
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.worker.mcp.elicit import (
    DECLINED_REASON,
    Verdict,
    approval_form,
    approval_verdict,
    may_decide,
    question_answer,
)
from toolcalls.worker.mcp.front import IDEMPOTENCY_KEY, MAX_KEY_CHARS, call_workflow_id
from toolcalls.worker.mcp.results import call_result
from toolcalls.worker.mcp.server import identity
from toolcalls.worker.mcp.tools import output_schema, tool_annotations
from toolcalls.workflows.models.approval import ApprovalRecord, ApprovalRequest, PreviewArtifact
from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallResult, ToolError

SPECS = {spec.name: spec for spec in BUILTIN_TOOLS}
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("tool", "hints"),
    [
        # read-only, destructive, idempotent, open world
        ("calculator", (True, False, True, False)),
        ("read_file", (True, False, True, False)),
        ("query_database", (True, False, True, False)),
        ("fetch_url", (True, False, True, True)),
        ("list_calendar_events", (True, False, True, True)),
        ("create_file", (False, True, False, False)),
        ("restore_change", (False, True, False, False)),
        ("execute_command", (False, True, False, True)),
        ("create_calendar_event", (False, True, False, True)),
        ("git", (False, True, False, True)),  # its capabilities depend on its arguments
    ],
)
def test_annotations_follow_the_side_effect_class_and_capabilities(
    tool: str, hints: tuple[bool, bool, bool, bool]
) -> None:
    found = tool_annotations(SPECS[tool])
    assert (
        found.read_only_hint,
        found.destructive_hint,
        found.idempotent_hint,
        found.open_world_hint,
    ) == hints


@pytest.mark.parametrize("tool", sorted(SPECS))
def test_every_output_schema_is_a_valid_object_schema(tool: str) -> None:
    # The SDK's client validates a completed call's structured content against it: a broken
    # schema would fail every call of the tool in the client.
    schema = output_schema(SPECS[tool])
    assert schema is not None
    assert schema["type"] == "object"
    validator_for(schema).check_schema(schema)


def test_workflow_ids_name_one_call_per_request_or_key() -> None:
    session = "session-1"
    by_request = call_workflow_id("ann", None, session, 7)
    assert by_request == call_workflow_id("bob", {"progress_token": 1}, session, 7)
    assert by_request.startswith("mcp-")
    assert by_request != call_workflow_id("ann", None, session, "7")
    assert by_request != call_workflow_id("ann", None, "session-2", 7)
    keyed = call_workflow_id("ann", {IDEMPOTENCY_KEY: "k"}, session, 7)
    assert keyed.startswith("mcp-key-")
    assert keyed == call_workflow_id("ann", {IDEMPOTENCY_KEY: "k"}, "other", 8)
    assert keyed != call_workflow_id("bob", {IDEMPOTENCY_KEY: "k"}, session, 7)
    # No session (stateless HTTP): nothing to tell a retry by, so every request is its own call.
    assert call_workflow_id("ann", None, None, 7) != call_workflow_id("ann", None, None, 7)


@pytest.mark.parametrize("key", ["", "  ", 12, "k" * (MAX_KEY_CHARS + 1)])
def test_a_malformed_idempotency_key_is_refused(key: object) -> None:
    with pytest.raises(MCPError) as refused:
        call_workflow_id("ann", {IDEMPOTENCY_KEY: key}, "s", 1)
    assert refused.value.error.code == types.INVALID_PARAMS
    assert IDEMPOTENCY_KEY in refused.value.error.message


def result(status: CallStatus, **fields: object) -> ToolCallResult:
    return ToolCallResult.model_validate(
        {
            "workflow_id": "wf",
            "call_id": "wf",
            "tool": "run_shell",
            "status": status,
            "started_at": NOW,
            "finished_at": NOW,
            **fields,
        }
    )


def test_a_failed_call_is_a_tool_error_with_its_code_and_partial_output() -> None:
    error = ToolError(
        code=ErrorCode.INVALID_ARGUMENTS,
        message="run_shell: command: blank",
        fixable_args=["command"],
    )
    mapped = call_result(result(CallStatus.CANCELED, error=error, output={"stdout": "x"}))
    assert mapped.is_error
    # The words every front gives a model (toolcalls.workflows.models.reply), in one block.
    assert [block.text for block in mapped.content if isinstance(block, types.TextContent)] == [
        "canceled: invalid_arguments: run_shell: command: blank (fix: command)\n"
        "the tool did not run\n"
        'partial output: {"stdout": "x"}',
    ]
    assert mapped.structured_content == {
        "status": "canceled",
        "error": error.model_dump(mode="json"),
        "note": "the tool did not run",
        "workflow_id": "wf",
        "output": {"stdout": "x"},
    }
    assert mapped.meta == {"toolcalls/workflow_id": "wf", "toolcalls/status": "canceled"}


def test_a_completed_call_is_its_output() -> None:
    mapped = call_result(result(CallStatus.COMPLETED, output={"exit_code": 0}))
    assert not mapped.is_error
    assert mapped.structured_content == {"exit_code": 0}
    assert [block.text for block in mapped.content if isinstance(block, types.TextContent)] == [
        '{"exit_code": 0}'
    ]


def test_a_person_s_answer_in_place_of_the_tool_is_what_the_model_reads() -> None:
    error = ToolError(code=ErrorCode.RESPONDED, message="alice answered in place of the tool")
    record = ApprovalRecord(
        request_id="r1",
        digest="d",
        approved=False,
        approver="alice",
        reason=None,
        decided_at=NOW,
        via="update",
        response="Use the reports folder.",
    )
    mapped = call_result(
        result(CallStatus.DENIED, error=error, approval=record, response=record.response)
    )
    assert [block.text for block in mapped.content if isinstance(block, types.TextContent)] == [
        "a person answered in place of the tool (it did not run): Use the reports folder."
    ]
    # A tool error to MCP all the same: a result that is not one must match the tool's output
    # schema, and a person's words do not (docs/mcp.md).
    assert mapped.is_error
    assert mapped.structured_content == {
        "status": "denied",
        "response": "Use the reports folder.",
        "responded_by": "alice",
        "workflow_id": "wf",
    }


@pytest.mark.parametrize(
    ("action", "content", "answer"),
    [
        ("accept", {"answer": "own words", "choice": "red"}, "own words"),
        ("accept", {"answer": "  ", "choice": "red"}, "red"),
        ("accept", {}, None),
        ("decline", None, None),
        ("cancel", None, None),
    ],
)
def test_the_question_form_answers_or_declines(
    action: str, content: dict[str, str] | None, answer: str | None
) -> None:
    elicited = types.ElicitResult.model_validate({"action": action, "content": content})
    assert question_answer(elicited) == answer


@pytest.mark.parametrize(
    ("action", "content", "verdict"),
    [
        ("accept", {"decision": "approve"}, Verdict(approved=True)),
        ("accept", {"decision": "deny", "reason": " no "}, Verdict(approved=False, reason="no")),
        ("accept", {"decision": "maybe"}, Verdict(approved=None)),
        ("decline", None, Verdict(approved=False, reason=DECLINED_REASON)),
        ("cancel", None, Verdict(approved=None)),
    ],
)
def test_the_approval_form_decides_or_leaves_the_call_waiting(
    action: str, content: dict[str, str] | None, verdict: Verdict
) -> None:
    elicited = types.ElicitResult.model_validate({"action": action, "content": content})
    assert approval_verdict(elicited) == verdict


def approval(**fields: object) -> ApprovalRequest:
    return ApprovalRequest.model_validate(
        {
            "request_id": "r1",
            "workflow_id": "wf",
            "call_id": "wf",
            "tool": "run_shell",
            "arguments": {"command": "make deploy"},
            "capabilities": ["process.execute", "shell.execute"],
            "digest": "d" * 64,
            "preview": [PreviewArtifact(kind="process", title="process", text="x" * 5000)],
            "reasons": ["shell.execute: require_approval (deployment)"],
            "requested_at": NOW,
            "expires_at": NOW,
            **fields,
        }
    )


def test_the_approval_form_shows_the_call_and_its_preview() -> None:
    message, schema = approval_form(approval())
    assert message.splitlines()[:4] == [
        "Approve this run_shell call?",
        'arguments: {"command": "make deploy"}',
        "capabilities: process.execute, shell.execute",
        "why approval: shell.execute: require_approval (deployment)",
    ]
    assert "process:\n" + "x" * 4000 + "\n… (1000 more characters)" in message
    assert message.endswith("expires: 2026-01-02T03:04:05Z")
    assert schema["properties"]["decision"]["oneOf"][0] == {"const": "approve", "title": "Approve"}


def test_only_an_allowed_approver_who_has_not_approved_yet_is_asked() -> None:
    assert may_decide("ann", approval())
    assert may_decide("ann", approval(approvers=["ann", "bob"]))
    assert not may_decide("eve", approval(approvers=["ann", "bob"]))
    assert not may_decide("ann", approval(approvers=["ann", "bob"], approved_by=["ann"]))


def test_the_mcp_user_comes_from_the_configuration_never_the_client() -> None:
    named = parse_config({"mcp": {"user": "alice", "approve_via_elicitation": True}})
    assert identity(named, http=True) == identity(named, http=False) == "alice"
    unnamed = parse_config({})
    assert identity(unnamed, http=False) == default_approver()
    assert identity(unnamed, http=True) == ""
    approving = parse_config({"mcp": {"approve_via_elicitation": True}})
    with pytest.raises(ConfigError, match=r"mcp\.user: approve_via_elicitation over HTTP needs"):
        identity(approving, http=True)
