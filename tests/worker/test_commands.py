"""The call commands as real subprocesses against the session's dev server and a real worker.

``call``, ``pending``, ``show``, ``approve``, ``deny`` and ``answer`` run as ``toolcalls``
processes; the worker runs in-process, or as a ``toolcalls worker`` subprocess where the test
stops it.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus

from tests.support.harness import history_types, make_config, running_worker
from tests.worker.support import (
    TOOLCALLS,
    Done,
    Spawn,
    command,
    field,
    hermetic_env,
    one_line,
    pending_entry,
    pending_row,
    toolcalls,
)
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, ToolCallResult

SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
STAMP = "%Y-%m-%dT%H:%M:%SZ"


def about(stamp: str | None, expected: datetime, slack: float = 60) -> bool:
    assert stamp is not None
    if stamp.endswith("Z") and "." not in stamp and "+" not in stamp:
        moment = datetime.strptime(stamp, STAMP).replace(tzinfo=UTC)
    else:
        moment = datetime.fromisoformat(stamp)
    return abs((moment - expected).total_seconds()) < slack


def outcome_of(done: Done) -> tuple[CallStatus, ErrorCode | None]:
    """The status and error code of the ``ToolCallResult`` a ``call --json`` printed."""
    result = ToolCallResult.model_validate_json(done.stdout)
    return result.status, result.error.code if result.error else None


async def test_approve_across_a_worker_restart(
    tmp_path: Path, spawn: Spawn, client: Client, address: str, task_queue: str
) -> None:
    workflow_id = f"cli-approve-{uuid.uuid4()}"
    worker = ("worker", "--address", address, "--task-queue", task_queue)
    first = spawn(*worker)
    await asyncio.to_thread(first.wait_for_line, "polling task queue", 60)

    started = await command(
        tmp_path,
        address,
        *("call", "calculator", '{"expression": "6 * 7"}', "--require-approval"),
        *("--no-wait", "--id", workflow_id, "--task-queue", task_queue),
    )
    assert started == Done(0, f"{workflow_id}\n", "")
    listed = await pending_entry(tmp_path, address, workflow_id)
    assert (listed["tool"], listed["capabilities"], listed["waiting_for"]) == (
        "calculator",
        [],
        "approval",
    )
    assert listed["preview"] == '{"expression": "6 * 7"}'
    assert about(listed["expires_at"], datetime.now(UTC) + timedelta(hours=24))
    assert listed["approval"]["reasons"] == [
        "tool:calculator: require_approval (request rule tool:calculator)"
    ]

    first.kill()
    # No worker now: the list, the call and the decision all still work.
    cells = await pending_row(tmp_path, address, workflow_id)
    assert cells[:5] == [workflow_id, "calculator", "-", "approval", "anyone"]
    assert about(cells[5], datetime.now(UTC) + timedelta(hours=24))
    assert cells[6] == '{"expression": "6 * 7"}'
    shown = await command(tmp_path, address, "show", workflow_id)
    assert shown.code == 0, shown.stderr
    assert field(shown.stdout, "status") == "awaiting approval"
    assert field(shown.stdout, "source") == (
        "no worker is serving this call: shown from describe, memo and history"
    )
    assert field(shown.stdout, "  request") == listed["request_id"]
    assert "WORKFLOW_EXECUTION_STARTED" in shown.stdout

    approved = await command(
        tmp_path, address, "approve", workflow_id, "--by", "alice", "--reason", "looks right"
    )
    assert approved == Done(
        0,
        f"queued: no worker is serving {workflow_id}; the approval is applied when one is\n",
        "",
    )
    handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
    assert SIGNALED in await history_types(handle)
    assert (await handle.describe()).status is WorkflowExecutionStatus.RUNNING

    spawn(*worker)
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "6 * 7", "result": 42}
    assert result.approval is not None
    assert (result.approval.approver, result.approval.reason, result.approval.via) == (
        "alice",
        "looks right",
        "signal",
    )

    shown = await command(tmp_path, address, "show", workflow_id)
    assert shown.code == 0, shown.stderr
    assert field(shown.stdout, "status") == "completed"
    assert field(shown.stdout, "source") == "the call's result, from history"
    assert field(shown.stdout, "  output") == '{"expression": "6 * 7", "result": 42}'
    assert field(shown.stdout, "  approval").startswith("approved by alice via signal at ")
    as_json = await command(tmp_path, address, "show", workflow_id, "--json")
    view = json.loads(as_json.stdout)
    assert (view["workflow_id"], view["live"], view["running"]) == (workflow_id, False, False)
    assert ToolCallResult.model_validate(view["state"]["result"]) == result


async def test_deny_ends_the_waiting_call_with_exit_1(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    workflow_id = f"cli-deny-{uuid.uuid4()}"
    async with running_worker(client, make_config(task_queue)) as probes:
        # probe_write needs approval under the default ceiling, and its preview is a diff.
        waiting = asyncio.ensure_future(
            command(
                tmp_path,
                address,
                *("call", "probe_write", '{"token": "t-deny"}', "--id", workflow_id),
                *("--task-queue", task_queue),
            )
        )
        listed = await pending_entry(tmp_path, address, workflow_id)
        assert (listed["tool"], listed["capabilities"]) == ("probe_write", ["filesystem.write"])
        assert listed["preview"] == "change: +t-deny"
        cells = await pending_row(tmp_path, address, workflow_id)
        assert cells[:4] == [workflow_id, "probe_write", "filesystem.write", "approval"]
        assert cells[6] == "change: +t-deny"
        shown = await command(tmp_path, address, "show", workflow_id)
        assert field(shown.stdout, "source") == "the worker serving the call (status query)"
        assert re.search(r"^  \S+ \S+\s+approval_requested\s+filesystem.write", shown.stdout, re.M)

        denied = await command(
            tmp_path, address, "deny", workflow_id, "--by", "bob", "--reason", "not today"
        )
        assert denied == Done(
            0, f"denied {workflow_id} (request {listed['request_id']}) by bob\n", ""
        )
        done = await asyncio.wait_for(waiting, 60)

    assert done.code == 1
    assert field(done.stdout, "status") == "denied"
    assert field(done.stdout, "error") == "approval_denied: probe_write: denied by bob: not today"
    # Piped, the long wait printed no progress: stderr is the one-line reason and nothing else.
    assert done.stderr == (
        f"toolcalls: call {workflow_id}: denied: approval_denied: probe_write: denied by bob: "
        "not today\n"
    )
    assert probes.runs == {}
    again = await command(tmp_path, address, "approve", workflow_id)
    assert again.code == 1
    assert one_line(again.stderr) == f"toolcalls: approve: {workflow_id}: no approval is pending"


async def test_progress_shows_on_a_terminal_only(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    workflow_id = f"tty-{uuid.uuid4().hex[:8]}"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        async with running_worker(client, make_config(task_queue)):
            process = await asyncio.create_subprocess_exec(
                *(TOOLCALLS, "call", "calculator", '{"expression": "2 + 3"}', "--require-approval"),
                *("--id", workflow_id, "--task-queue", task_queue, "--address", address),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=slave,
                env=hermetic_env(tmp_path),
                cwd=tmp_path,
                start_new_session=True,
            )
            os.close(slave)
            deadline = time.monotonic() + 30
            # The clock ticks while the call waits for its approval.
            while not re.search(rb"\r[1-9]\d*s " + workflow_id.encode(), seen):
                assert time.monotonic() < deadline, bytes(seen)
                await asyncio.sleep(0.1)
            approved = await command(tmp_path, address, "approve", workflow_id)
            assert approved.code == 0, approved.stderr
            stdout, _ = await asyncio.wait_for(process.communicate(), 30)
    finally:
        reader.join(10)
        os.close(master)

    assert process.returncode == 0
    assert field(stdout.decode(), "status") == "completed"
    text = seen.decode()
    waiting = (
        f"{workflow_id} calculator: awaiting approval "
        f"(toolcalls approve|deny|respond {workflow_id})"
    )
    assert re.search(r"\r\d+s " + re.escape(waiting) + r"\x1b\[K", text), text
    # Every redraw is one line, and the line is erased before the result is printed.
    assert "\n" not in text
    assert text.endswith("\r\x1b[K")


async def test_answer_and_decline(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    asked, declined = (f"cli-ask-{uuid.uuid4()}" for _ in range(2))
    question = json.dumps({"question": "Which format?", "options": ["JSON", "CSV"]})
    async with running_worker(client, make_config(task_queue)):
        for workflow_id in (asked, declined):
            started = await command(
                tmp_path,
                address,
                *("call", "ask_user", question, "--no-wait", "--id", workflow_id),
                *("--task-queue", task_queue),
            )
            assert started.code == 0, started.stderr
        listed = await pending_entry(tmp_path, address, asked)
        assert (listed["tool"], listed["capabilities"], listed["waiting_for"]) == (
            "ask_user",
            ["user.interact"],
            "answer",
        )
        assert listed["preview"] == "Which format? [JSON, CSV]"
        assert about(listed["expires_at"], datetime.now(UTC) + timedelta(seconds=300))
        await pending_entry(tmp_path, address, declined)

        blank = await command(tmp_path, address, "answer", asked, "   ")
        assert (blank.code, blank.stdout) == (1, "")
        assert one_line(blank.stderr) == (
            f"toolcalls: answer {asked}: rejected: the answer is blank; send null to decline"
        )
        wrong = await command(tmp_path, address, "approve", asked)
        assert wrong.code == 1
        assert one_line(wrong.stderr) == f"toolcalls: approve: {asked}: no approval is pending"

        answered = await command(
            tmp_path, address, "answer", asked, "CSV", "--by", "carol", "--json"
        )
        assert answered.code == 0, answered.stderr
        outcome = json.loads(answered.stdout)
        assert (outcome["action"], outcome["delivery"], outcome["reason"]) == (
            "answer",
            "accepted",
            None,
        )
        assert outcome["record"] == {
            "request_id": listed["request_id"],
            "status": "answered",
            "answer": "CSV",
        }
        refused = await command(tmp_path, address, "answer", declined, "--decline")
        assert refused.code == 0, refused.stderr
        assert re.fullmatch(
            rf"declined {re.escape(declined)} \(request [0-9a-f-]+\)\n", refused.stdout
        )
        results = [
            await asyncio.wait_for(
                client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result(), 30
            )
            for workflow_id in (asked, declined)
        ]

    assert results[0].output == {
        "request_id": listed["request_id"],
        "status": "answered",
        "answer": "CSV",
    }
    assert [e.message for e in results[0].events if e.kind is EventKind.QUESTION_ANSWERED] == [
        "by carol"
    ]
    assert (results[1].output["status"], results[1].output["answer"]) == ("declined", None)
    late = await command(tmp_path, address, "answer", asked, "JSON")
    assert late.code == 1
    assert one_line(late.stderr) == f"toolcalls: answer: {asked}: no question is pending"


async def test_call_exit_codes_policies_and_json(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    queue = ("--task-queue", task_queue)
    policy_file = tmp_path / "policy.json"
    policy_file.write_text('{"tools": {"calculator": "deny"}}', encoding="utf-8")
    never = f"cli-never-{uuid.uuid4()}"
    async with running_worker(client, make_config(task_queue)):
        ok = await command(
            tmp_path, address, "call", "calculator", '{"expression": "6 * 7"}', "--json", *queue
        )
        assert (ok.code, ok.stderr) == (0, "")
        result = ToolCallResult.model_validate_json(ok.stdout)
        assert result.status is CallStatus.COMPLETED
        assert result.output == {"expression": "6 * 7", "result": 42}

        failed = await command(
            tmp_path, address, "call", "calculator", '{"expression": "1 / 0"}', *queue
        )
        assert failed.code == 1
        assert field(failed.stdout, "status") == "failed"
        assert field(failed.stdout, "error") == (
            "execution_failed: calculator: division by zero (fix: expression)"
        )
        assert re.fullmatch(
            r"toolcalls: call toolcall-[0-9a-f-]+: failed: execution_failed: calculator: "
            r"division by zero\n",
            failed.stderr,
        )

        one = ("call", "calculator", '{"expression": "1"}', "--json", *queue)
        from_file = await command(tmp_path, address, *one, "--policy", str(policy_file))
        assert from_file.code == 1
        assert outcome_of(from_file) == (CallStatus.DENIED, ErrorCode.POLICY_DENIED)
        inline = await command(
            tmp_path,
            address,
            *("call", "ask_user", '{"question": "Sure?"}', "--json", *queue),
            *("--policy", '{"rules": {"user.*": "deny"}}'),
        )
        assert inline.code == 1
        assert outcome_of(inline) == (CallStatus.DENIED, ErrorCode.POLICY_DENIED)
        timed_out = await command(
            tmp_path, address, *one, "--require-approval", "--approval-timeout", "0.5"
        )
        assert timed_out.code == 1
        assert outcome_of(timed_out) == (CallStatus.DENIED, ErrorCode.APPROVAL_TIMED_OUT)

        waits = ("call", "calculator", '{"expression": "1"}', "--require-approval", "--no-wait")
        untimed = await command(
            tmp_path, address, *waits, "--approval-timeout", "none", "--id", never, *queue
        )
        assert untimed.code == 0, untimed.stderr
        # The same call again is that call; another call under its id is refused.
        joined = await command(tmp_path, address, *waits, "--id", never, *queue)
        assert (joined.code, joined.stdout) == (0, f"{never}\n")
        assert one_line(joined.stderr) == (
            f"toolcalls: call {never} already exists and is running: joined it, started nothing"
        )
        other = ("call", "calculator", '{"expression": "2"}', "--no-wait", "--id", never)
        taken = await command(tmp_path, address, *other, *queue)
        assert taken.code == 1
        assert one_line(taken.stderr) == (
            f"toolcalls: call: {never} is already a call of calculator with other arguments; "
            "a call id runs one call, once"
        )
        assert (await pending_entry(tmp_path, address, never))["expires_at"] is None
        assert (await pending_row(tmp_path, address, never))[5] == "never"
        cleared = await command(tmp_path, address, "deny", never)
        assert cleared.code == 0, cleared.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("call", "calculator", '{"expression": "1"}'),
        ("pending",),
        ("show", "some-call"),
        ("approve", "some-call"),
        ("answer", "some-call", "--decline"),
    ],
)
async def test_unreachable_server_exits_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = await toolcalls(tmp_path, *args, "--address", "127.0.0.1:1")
    assert (done.code, done.stdout) == (2, "")
    assert one_line(done.stderr).startswith(
        "toolcalls: cannot connect to 127.0.0.1:1 namespace default: "
    )


async def test_unknown_namespace_exits_2(tmp_path: Path, address: str) -> None:
    done = await toolcalls(tmp_path, "pending", "--address", address, "--namespace", "nope-ns")
    assert done.code == 2
    assert one_line(done.stderr) == (
        f"toolcalls: cannot connect to {address} namespace nope-ns: Namespace nope-ns is not found."
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("call", "calculator", "{"), "toolcalls: call: ARGS_JSON is not valid JSON: "),
        (
            ("call", "calculator", "[1]"),
            "toolcalls: call: ARGS_JSON must be a JSON object, not list",
        ),
        (
            ("call", "calculator", "--policy", '{"default_effect": "maybe"}'),
            "toolcalls: call: --policy: default_effect: Input should be 'allow', "
            "'require_approval' or 'deny'",
        ),
        (
            ("call", "calculator", "--policy", '{"rules": {"filesystem.wirte": "deny"}}'),
            "toolcalls: call: --policy: rules: rule keys ['filesystem.wirte'] match no capability",
        ),
        (
            ("call", "calculator", "--policy", '{"rules": {}, "budget": 3}'),
            "toolcalls: call: --policy: budget: Extra inputs are not permitted",
        ),
        (
            ("call", "calculator", "@no-such-arguments.json"),
            "toolcalls: call: ARGS_JSON @no-such-arguments.json: cannot read: No such file",
        ),
        (
            ("call", "calculator", "--policy", "no-such-policy.json"),
            "toolcalls: call: --policy no-such-policy.json: cannot read: No such file or directory",
        ),
        (
            ("call", "calculator", "--approval-timeout", "soon"),
            "argument --approval-timeout: 'soon' is not a positive number of seconds or none",
        ),
        (
            ("call", "calculator", "--approval-timeout", "-5"),
            "argument --approval-timeout: '-5' is not a positive number of seconds or none",
        ),
        (("answer", "some-call"), "toolcalls answer: error: give either TEXT or --decline"),
        (("answer", "some-call", "x", "--decline"), "give either TEXT or --decline"),
        (("approve", "some-call", "--by", "x" * 201), "--by: at most 200 characters"),
        (("deny",), "the following arguments are required: WORKFLOW_ID"),
    ],
)
async def test_bad_arguments_exit_2_before_connecting(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    # The address is unreachable: the arguments are refused before any connection is tried.
    done = await toolcalls(tmp_path, *args, "--address", "127.0.0.1:1")
    assert (done.code, done.stdout) == (2, "")
    last = done.stderr.strip().splitlines()[-1]
    assert expected in last, done.stderr
    assert "cannot connect" not in done.stderr
