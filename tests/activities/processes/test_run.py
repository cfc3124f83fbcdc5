"""execute_command and run_shell running real processes, in an activity context.

Every test that starts a process group checks that nothing of it is left running.
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support.processes import (
    SYSTEM_PATH,
    activity_env,
    alive,
    call,
    eventually,
    executable,
    live_members,
    make_tools,
)
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES
from toolcalls.activities.processes.command_args import ExecuteCommandArgs, RunShellArgs
from toolcalls.activities.processes.commands import MAX_RESULT_BYTES, ProcessTools
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.runner import (
    ProcessResult,
    ProcessSpec,
    run_process,
)
from toolcalls.workflows.models.call import ErrorCode


def args(root: Path, argv: list[str], **more: Any) -> ExecuteCommandArgs:
    return ExecuteCommandArgs.model_validate(
        {"argv": argv, "cwd": str(root), "env": [f"PATH={SYSTEM_PATH}"], **more}
    )


async def run(
    tools: ProcessTools, arguments: ExecuteCommandArgs, env: ActivityEnvironment | None = None
) -> ProcessResult:
    return await (env or activity_env()).run(tools.execute_command, arguments, call())


def pgid_of(stdout: str) -> int:
    """The group a script reported with ``echo pgid=$$`` (its shell leads the group)."""
    line = next(line for line in stdout.splitlines() if line.startswith("pgid="))
    return int(line.removeprefix("pgid="))


async def test_background_child_holding_the_pipes_is_killed_at_the_timeout(
    tools: ProcessTools, root: Path
) -> None:
    result = await run(
        tools,
        args(
            root, ["sh", "-c", "echo pgid=$$; sleep 100 & echo sleep=$!; wait"], timeout_seconds=1
        ),
    )
    assert result.timed_out
    assert result.exit_code is None
    assert not result.canceled
    assert not result.budget_exceeded
    # It waited out the timeout, and did not wait for the background sleep holding the pipes
    # (the hang of bpo-37424 would last its 100 s).
    assert 1 <= result.duration_seconds < 50
    sleeper = int(result.stdout.split("sleep=")[1].split()[0])
    assert not alive(sleeper)
    assert live_members(pgid_of(result.stdout)) == []


async def test_descendants_left_behind_are_killed_when_the_program_exits(
    tools: ProcessTools, root: Path
) -> None:
    script = "echo pgid=$$; sleep 100 & echo sleep=$!"
    result = await run(tools, args(root, ["sh", "-c", script], timeout_seconds=30))
    assert result.exit_code == 0
    # Waiting for the 100 s sleep that holds the pipes would have run into the 30 s timeout.
    assert not result.timed_out
    assert not alive(int(result.stdout.split("sleep=")[1]))
    assert live_members(pgid_of(result.stdout)) == []


async def test_endless_output_is_capped_while_the_pipes_keep_draining(
    tools: ProcessTools, root: Path
) -> None:
    beats: list[dict[str, Any]] = []
    env = activity_env(heartbeat=0.3)
    env.on_heartbeat = lambda *details: beats.append(details[0])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = await run(
        tools,
        args(
            root, ["sh", "-c", "echo pgid=$$; exec yes"], timeout_seconds=1.5, max_output_bytes=4096
        ),
        env,
    )
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert result.truncated
    assert result.timed_out
    assert len(result.stdout.encode()) == 4096
    assert set(result.stdout.split("\n")[1:-1]) == {"y"}  # the cut may fall after a newline
    seen = max(beat["stdout_bytes"] for beat in beats)
    # The program wrote far more than was kept, and the worker did not keep it.
    assert seen > 50_000_000
    assert grown_kib * 1024 < seen / 4
    assert live_members(pgid_of(result.stdout)) == []


async def test_invalid_utf8_is_replaced(tools: ProcessTools, root: Path) -> None:
    result = await run(
        tools, args(root, ["printf", "ok \\377\\376 \\303\\251 end"]), activity_env()
    )
    assert result.exit_code == 0
    assert result.stdout == "ok \ufffd\ufffd é end"


async def test_a_shell_looking_argument_is_passed_literally(
    tools: ProcessTools, root: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "never"
    text = f"; touch {marker}; rm -rf / #"
    result = await run(tools, args(root, ["printf", "%s", text]))
    assert result.exit_code == 0
    assert result.stdout == text
    assert not marker.exists()
    # As the program name it is looked for as a file, never handed to a shell.
    with pytest.raises(ApplicationError) as info:
        await run(tools, args(root, [text]))
    assert info.value.type == ErrorCode.INVALID_ARGUMENTS.value
    assert not marker.exists()


async def test_stdin_is_at_eof(tools: ProcessTools, root: Path) -> None:
    result = await run(
        tools, args(root, ["sh", "-c", "cat; read line; echo read=$?"], timeout_seconds=20)
    )
    assert result.exit_code == 0
    assert result.stdout == "read=1\n"
    assert not result.timed_out  # a program waiting on stdin would have run into the 20 s


async def test_empty_env_inherits_nothing(
    tools: ProcessTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKER_SECRET", "must-not-leak")
    empty = await run(tools, ExecuteCommandArgs(argv=["/usr/bin/env"], cwd=str(root), env={}))
    assert (empty.exit_code, empty.stdout, empty.stderr) == (0, "", "")
    given = await run(
        tools, ExecuteCommandArgs(argv=["/usr/bin/env"], cwd=str(root), env=["A=1", "B=x=y"])
    )
    assert given.stdout == "A=1\nB=x=y\n"


async def test_cwd_is_the_resolved_directory(tools: ProcessTools, root: Path) -> None:
    (root / "real").mkdir()
    (root / "link").symlink_to(root / "real")
    result = await run(tools, args(root / "link", ["sh", "-c", "pwd"]))
    assert result.stdout == f"{root / 'real'}\n"


async def test_non_zero_exit_and_stderr_are_a_result(tools: ProcessTools, root: Path) -> None:
    result = await run(tools, args(root, ["sh", "-c", "echo out; echo err >&2; exit 7"]))
    assert result.model_dump(exclude={"duration_seconds"}) == {
        "exit_code": 7,
        "stdout": "out\n",
        "stderr": "err\n",
        "truncated": False,
        "timed_out": False,
        "canceled": False,
        "budget_exceeded": False,
    }


async def test_killed_by_a_signal_reports_the_signal(tools: ProcessTools, root: Path) -> None:
    result = await run(tools, args(root, ["sh", "-c", "kill -KILL $$"]))
    assert result.exit_code == -9
    assert not result.timed_out


async def test_run_shell_runs_a_pipeline_in_the_deployment_directory(
    tools: ProcessTools, root: Path
) -> None:
    (root / "b.txt").write_text("", encoding="utf-8")
    (root / "a.txt").write_text("", encoding="utf-8")
    result = await activity_env().run(
        tools.run_shell, RunShellArgs(command="ls | sort -r; echo $PATH"), call()
    )
    assert result.exit_code == 0
    assert result.stdout == "b.txt\na.txt\n/bin:/usr/bin\n"


async def test_heartbeats_carry_the_tail_and_byte_counts(tools: ProcessTools, root: Path) -> None:
    beats: list[dict[str, Any]] = []
    env = activity_env(heartbeat=0.3)
    env.on_heartbeat = lambda *details: beats.append(details[0])
    script = "echo first; echo warn >&2; sleep 0.5; echo second; sleep 0.5"
    result = await run(tools, args(root, ["sh", "-c", script]), env)
    assert result.stdout == "first\nsecond\n"
    assert beats[0] == {"stdout_bytes": 0, "stderr_bytes": 0, "tail": ""}
    assert {"stdout_bytes": 6, "stderr_bytes": 5, "tail": "first\nwarn\n"} in beats
    assert {"stdout_bytes": 13, "stderr_bytes": 5, "tail": "first\nwarn\nsecond\n"} in beats


async def test_cancellation_terms_then_kills_and_keeps_the_partial_output(
    tools: ProcessTools, root: Path, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    script = f"trap 'echo got-term' TERM; echo pgid=$$; touch {ready}; while :; do sleep 0.1; done"
    env = activity_env()
    task = asyncio.create_task(run(tools, args(root, ["sh", "-c", script]), env))
    await eventually(ready.exists, what="the script started")
    env.cancel()
    with pytest.raises(ApplicationError) as info:
        await task
    error = info.value
    assert error.type == ErrorCode.CANCELED.value
    assert error.message == "execute_command: canceled; the process group was killed"
    partial = ProcessResult.model_validate(error.details[0]["output"])
    assert partial.canceled
    assert partial.exit_code is None
    # SIGTERM reached the script (it trapped it and went on), SIGKILL ended it after the grace.
    assert "got-term" in partial.stdout
    assert partial.duration_seconds >= 0.5
    assert live_members(pgid_of(partial.stdout)) == []


def running(command_line: str) -> bool:
    """Whether a live process has exactly this command line (``pgrep -f``)."""
    return subprocess.run(["pgrep", "-f", command_line], check=False).returncode == 0


@pytest.mark.parametrize("delay", [0, 0.001, 0.003, 0.01, 0.05])
async def test_cancellation_while_the_process_starts_leaves_nothing(
    tmp_path: Path, delay: float
) -> None:
    marker = f"{9000 + delay * 1000:.3f}{len(str(tmp_path)) % 10}"  # a unique sleep duration
    ledger = ProcessLedger(tmp_path / "ledger")
    spec = ProcessSpec(
        argv=["/bin/sh", "-c", f"sleep {marker} & wait"],
        cwd=str(tmp_path),
        env={},
        timeout_seconds=60,
        max_output_bytes=1024,
    )
    task = asyncio.create_task(run_process(spec, ledger=ledger, kill_grace=0.5))
    await asyncio.sleep(delay)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    if info.value.args:  # canceled after the child existed: the partial result comes along
        assert info.value.args[0].canceled
    assert not running(f"sleep {marker}")
    assert list(ledger.directory.iterdir()) == []


async def test_worker_shutdown_kills_the_group_and_says_so(
    tools: ProcessTools, root: Path, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    env = activity_env()
    script = f"echo pgid=$$; touch {ready}; sleep 100"
    task = asyncio.create_task(env.run(tools.run_shell, RunShellArgs(command=script), call()))
    await eventually(ready.exists, what="the script started")
    env.worker_shutdown()
    env.cancel()
    with pytest.raises(ApplicationError) as info:
        await task
    assert (
        info.value.message == "run_shell: the worker is shutting down; the process group was killed"
    )
    partial = ProcessResult.model_validate(info.value.details[0]["output"])
    assert live_members(pgid_of(partial.stdout)) == []


async def test_too_little_budget_refuses_before_starting(
    tools: ProcessTools, root: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(ApplicationError) as info:
        await run(tools, args(root, ["touch", str(marker)]), activity_env(schedule_to_close=4))
    assert info.value.type == ErrorCode.BUDGET_EXCEEDED.value
    assert "of the call's budget: too little to run and stop a command" in info.value.message
    assert not marker.exists()


async def test_the_remaining_budget_cuts_the_timeout(tools: ProcessTools, root: Path) -> None:
    # 7 s left, less 2 s margin, 0.5 s grace, 1 s settle and 1 s drain: 2.5 s to run.
    result = await run(
        tools,
        args(root, ["sh", "-c", "echo pgid=$$; sleep 30"], timeout_seconds=60),
        activity_env(schedule_to_close=7),
    )
    assert result.timed_out
    assert result.budget_exceeded  # cut by the budget, not the 60 s timeout or the 30 s sleep
    assert result.duration_seconds > 2.0  # it did run its 2.5 s
    assert live_members(pgid_of(result.stdout)) == []


async def test_output_that_escapes_large_is_cut_to_fit_the_payload_cap(
    tmp_path: Path, root: Path
) -> None:
    tools = make_tools(tmp_path, root)
    # A NUL byte decodes to one character that JSON writes as six bytes (\u0000).
    result = await run(
        tools, args(root, ["head", "-c", "1048576", "/dev/zero"], max_output_bytes=1_048_576)
    )
    assert result.exit_code == 0
    assert result.truncated
    size = len(result.model_dump_json().encode())
    assert MAX_RESULT_BYTES - 6 < size <= MAX_RESULT_BYTES < MAX_PAYLOAD_BYTES
    assert set(result.stdout) == {"\0"}
    assert len(result.stdout) > 160_000


async def test_a_program_the_kernel_cannot_run_is_an_execution_failure(
    tools: ProcessTools, root: Path
) -> None:
    binary = root / "not-a-program"
    binary.write_bytes(b"\x7fELF garbage")
    binary.chmod(0o755)
    with pytest.raises(ApplicationError) as info:
        await run(tools, args(root, [str(binary)]))
    assert info.value.type == ErrorCode.EXECUTION_FAILED.value
    assert info.value.message == f"execute_command: {binary}: cannot run: exec format error"


async def test_precondition_fails_when_the_path_lookup_changes(
    tools: ProcessTools, root: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    executable(second / "tool", "echo second")
    request = args(root, ["tool"], env=[f"PATH={first}:{second}"])
    prepared = await tools.prepare_execute_command(request, call())
    executable(first / "tool", "echo first")
    with pytest.raises(ApplicationError) as info:
        await activity_env().run(tools.execute_command, request, call(prepared.precondition))
    assert info.value.type == ErrorCode.PRECONDITION_FAILED.value
    assert info.value.message == (
        f"execute_command: changed since it was approved: argv (['{second}/tool'] -> "
        f"['{first}/tool']); executable ('{second}/tool' -> '{first}/tool'); call again to "
        "get a new approval"
    )


async def test_precondition_fails_when_the_program_is_replaced(
    tools: ProcessTools, root: Path, tmp_path: Path
) -> None:
    tool = executable(tmp_path / "bin" / "tool", "echo old")
    request = args(root, [str(tool)])
    prepared = await tools.prepare_execute_command(request, call())
    unchanged = await activity_env().run(
        tools.execute_command, request, call(prepared.precondition)
    )
    assert unchanged.stdout == "old\n"
    replacement = executable(tmp_path / "bin" / "new", "echo replaced")
    replacement.replace(tool)
    with pytest.raises(ApplicationError) as info:
        await activity_env().run(tools.execute_command, request, call(prepared.precondition))
    assert info.value.type == ErrorCode.PRECONDITION_FAILED.value
    assert f"the file {tool} was replaced or modified" in info.value.message


async def test_a_ledger_that_cannot_record_still_leaves_no_process(tmp_path: Path) -> None:
    ledger = ProcessLedger(tmp_path / "ledger")
    ledger.directory.rmdir()  # recording the group fails (as a full or vanished disk would)
    pid_file = tmp_path / "pid"
    spec = ProcessSpec(
        argv=["/bin/sh", "-c", f"echo $$ > {pid_file}; sleep 100 & wait"],
        cwd=str(tmp_path),
        env={},
        timeout_seconds=60,
        max_output_bytes=1024,
    )
    with pytest.raises(FileNotFoundError):
        await run_process(spec, ledger=ledger, kill_grace=0.5)
    # The group may be killed before the shell ran its first command (a busy machine): then no
    # process names the pid file, and no child was started.
    await eventually(
        lambda: pid_file.exists() or not naming(pid_file), what="the shell wrote its pid or died"
    )
    written = pid_file.read_text().strip() if pid_file.exists() else ""
    if written:
        pgid = int(written)
        await eventually(lambda: live_members(pgid) == [], timeout=3, what="the group killed")
    else:
        await eventually(lambda: not naming(pid_file), timeout=3, what="the shell killed")


def naming(path: Path) -> list[int]:
    """Live processes whose command line holds ``path``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(path).encode() in command and state != "Z":
            found.append(int(entry.name))
    return found
