"""What a model reads back from each outcome (``toolcalls.workflows.models.reply``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from toolcalls.workflows.models.approval import ApprovalRecord
from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallResult, ToolError
from toolcalls.workflows.models.reply import TRUNCATED_NOTE, UNCERTAIN_NOTE, model_reply

NOW = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)


def result(status: CallStatus, **fields: Any) -> ToolCallResult:
    return ToolCallResult(
        workflow_id="wf-1",
        call_id="c1",
        tool="create_file",
        status=status,
        started_at=NOW,
        finished_at=NOW,
        **fields,
    )


def denial(reason: str | None) -> ApprovalRecord:
    return ApprovalRecord(
        request_id="r1",
        digest="d",
        approved=False,
        approver="alice",
        reason=reason,
        decided_at=NOW,
        via="update",
    )


def test_completed_is_the_output_as_json() -> None:
    reply = model_reply(result(CallStatus.COMPLETED, output={"path": "/a.txt", "bytes": 3}))
    assert json.loads(reply.text) == {"path": "/a.txt", "bytes": 3}
    assert reply.data == {"status": "completed", "output": {"path": "/a.txt", "bytes": 3}}
    assert (reply.is_error, reply.retry) == (False, False)


def test_a_scalar_output_is_wrapped() -> None:
    reply = model_reply(result(CallStatus.COMPLETED, output=42))
    assert json.loads(reply.text) == {"result": 42}


def test_truncated_output_says_so() -> None:
    reply = model_reply(result(CallStatus.COMPLETED, output={"text": "ab", "truncated": True}))
    first, note = reply.text.split("\n")
    assert json.loads(first) == {"text": "ab", "truncated": True}
    assert note == TRUNCATED_NOTE
    assert reply.data["note"] == TRUNCATED_NOTE


def test_a_person_s_denial_carries_the_reason() -> None:
    error = ToolError(code=ErrorCode.APPROVAL_DENIED, message="denied by alice")
    reply = model_reply(
        result(CallStatus.DENIED, error=error, approval=denial("use the docs folder"))
    )
    assert reply.text.splitlines() == [
        "denied: approval_denied: denied by alice",
        "a person denied this call and the tool did not run; "
        "the approver said: use the docs folder",
    ]
    assert (reply.is_error, reply.retry) == (True, False)
    assert reply.data["error"]["code"] == "approval_denied"


def test_a_denial_without_a_reason_says_none_was_given() -> None:
    error = ToolError(code=ErrorCode.APPROVAL_DENIED, message="denied by alice")
    reply = model_reply(result(CallStatus.DENIED, error=error, approval=denial(None)))
    assert reply.text.endswith("the approver gave no reason")


def test_a_policy_denial_names_the_rule_and_that_nothing_ran() -> None:
    error = ToolError(code=ErrorCode.POLICY_DENIED, message="filesystem.write: deny (ceiling)")
    reply = model_reply(result(CallStatus.DENIED, error=error))
    assert reply.text == (
        "denied: policy_denied: filesystem.write: deny (ceiling)\nthe tool did not run"
    )


def test_a_quota_denial_says_when_to_try_again_and_that_nothing_ran() -> None:
    message = "send_email: quota sends exceeded: 2 of 2 per 1h used by alice; try again after X"
    error = ToolError(code=ErrorCode.QUOTA_EXCEEDED, message=message, retryable=True, retry_at=NOW)
    reply = model_reply(result(CallStatus.DENIED, error=error))
    assert reply.text == f"denied: quota_exceeded: {message} (retryable)\nthe tool did not run"
    assert reply.data["error"]["retry_at"] == "2026-12-05T09:30:00Z"
    assert reply.is_error
    assert not reply.retry


def test_a_fixable_failure_asks_for_fixed_arguments() -> None:
    error = ToolError(
        code=ErrorCode.INVALID_ARGUMENTS, message="path: must be absolute", fixable_args=["path"]
    )
    reply = model_reply(result(CallStatus.FAILED, error=error))
    assert reply.text.splitlines() == [
        "failed: invalid_arguments: path: must be absolute (fix: path)",
        "the tool did not run",
    ]
    assert reply.retry is True


def test_a_fixable_execution_failure_says_which_to_fix() -> None:
    error = ToolError(
        code=ErrorCode.PRECONDITION_FAILED,
        message="old_text: not found in the file",
        fixable_args=["old_text"],
        retryable=False,
    )
    reply = model_reply(result(CallStatus.FAILED, error=error))
    assert reply.text.splitlines()[1] == "call the tool again with old_text fixed"
    assert reply.retry is True


def test_a_retryable_failure_says_so() -> None:
    error = ToolError(code=ErrorCode.NETWORK_UNAVAILABLE, message="dns failed", retryable=True)
    reply = model_reply(result(CallStatus.FAILED, error=error))
    assert reply.text == "failed: network_unavailable: dns failed (retryable)"
    assert reply.retry is False


@pytest.mark.parametrize(
    ("code", "note"),
    [(ErrorCode.APPROVAL_TIMED_OUT, "the tool did not run"), (ErrorCode.TIMED_OUT, None)],
)
def test_timed_out_says_whether_the_tool_ran(code: ErrorCode, note: str | None) -> None:
    error = ToolError(code=code, message="no decision within 1h")
    reply = model_reply(result(CallStatus.TIMED_OUT, error=error))
    assert reply.text.splitlines()[1:] == ([note] if note else [])
    assert reply.is_error


def test_uncertain_says_not_to_repeat() -> None:
    error = ToolError(code=ErrorCode.UNCERTAIN, message="the worker was lost during the send")
    reply = model_reply(result(CallStatus.UNCERTAIN, error=error, output={"message_id": "<m@x>"}))
    assert reply.text.splitlines() == [
        "uncertain: uncertain: the worker was lost during the send",
        UNCERTAIN_NOTE,
        'partial output: {"message_id": "<m@x>"}',
    ]
    assert "do not repeat" in UNCERTAIN_NOTE
    assert reply.data["output"] == {"message_id": "<m@x>"}


def test_canceled_carries_partial_output() -> None:
    error = ToolError(code=ErrorCode.CANCELED, message="canceled by the parent")
    reply = model_reply(result(CallStatus.CANCELED, error=error, output={"stdout": "12"}))
    assert reply.text.splitlines() == [
        "canceled: canceled: canceled by the parent",
        'partial output: {"stdout": "12"}',
    ]


def test_a_result_without_an_error_is_an_internal_one() -> None:
    reply = model_reply(result(CallStatus.FAILED))
    assert reply.text == "failed: internal: the call ended without one"


def test_a_person_s_answer_in_place_of_the_tool_is_its_output() -> None:
    error = ToolError(code=ErrorCode.RESPONDED, message="alice answered in place of the tool")
    record = denial("wrong folder").model_copy(update={"response": "Use /docs/a.txt instead."})
    reply = model_reply(
        result(CallStatus.DENIED, error=error, approval=record, response=record.response)
    )
    assert reply.text == (
        "a person answered in place of the tool (it did not run): Use /docs/a.txt instead."
    )
    assert reply.data == {
        "status": "denied",
        "response": "Use /docs/a.txt instead.",
        "responded_by": "alice",
    }
    assert (reply.is_error, reply.retry) == (False, False)
