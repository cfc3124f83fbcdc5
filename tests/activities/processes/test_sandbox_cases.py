"""The sandbox beyond ``execute_command``'s own tests: the hostile cases of the process tools,
``git`` in the sandbox, the capabilities it asks for, and a configuration that cannot start it."""

from __future__ import annotations

import asyncio
import shutil
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tests.activities.processes.test_resolve import config, problems
from tests.activities.processes.test_sandbox import marked, run, tools_for
from tests.support.gitrepo import Repo, git_tools, run_git
from tests.support.processes import activity_env, call, eventually
from toolcalls.activities.processes.family import PROCESSES, ProcessFamilySettings
from toolcalls.activities.processes.git.args import GitArgs
from toolcalls.activities.processes.git.family import GIT, GitFamilySettings
from toolcalls.workflows.models.call import CapabilityPolicy, Effect, ErrorCode
from toolcalls.workflows.rules.policy import decide, evaluate

pytestmark = pytest.mark.skipif(not shutil.which("bwrap"), reason="make test installs bubblewrap")


async def test_a_background_sleep_ends_with_the_timeout(tmp_path: Path) -> None:
    tools = tools_for(tmp_path)
    started = time.monotonic()
    result = await run(tools, ["sh", "-c", "sleep 3456.5 & wait"], tmp_path / "root", timeout=1)
    assert result.timed_out
    assert time.monotonic() - started < 1 + 0.5 + 5
    assert marked("sleep 3456.5") == []


async def test_endless_output_is_capped(tmp_path: Path) -> None:
    tools = tools_for(tmp_path)
    result = await run(tools, ["yes"], tmp_path / "root", timeout=2, max_output_bytes=1000)
    assert result.truncated
    assert len(result.stdout) + len(result.stderr) <= 1000


async def test_invalid_utf8_stdin_at_eof_and_a_literal_argv(tmp_path: Path) -> None:
    tools = tools_for(tmp_path)
    root = tmp_path / "root"
    bad = await run(tools, ["printf", "\\377ok"], root)
    assert bad.stdout == "\ufffdok"
    stdin = await run(tools, ["cat"], root, timeout=5)
    assert (stdin.exit_code, stdin.timed_out) == (0, False)
    literal = await run(tools, ["echo", "; rm -rf / #"], root)
    assert (literal.exit_code, literal.stdout) == (0, "; rm -rf / #\n")


async def test_a_cwd_outside_the_roots_is_refused_before_anything_runs(tmp_path: Path) -> None:
    tools = tools_for(tmp_path)
    with pytest.raises(ApplicationError) as info:
        await run(tools, ["true"], tmp_path / "root" / ".." / "..")
    assert info.value.type == ErrorCode.INVALID_ARGUMENTS.value
    assert "not inside a configured root" in info.value.message


async def test_a_program_the_sandbox_does_not_show_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "bin"
    outside.mkdir()
    program = outside / "tool"
    program.write_text("#!/bin/sh\necho ran\n")
    program.chmod(0o755)
    with pytest.raises(ApplicationError) as info:
        await run(tools_for(tmp_path), [str(program)], tmp_path / "root")
    assert info.value.type == ErrorCode.INVALID_ARGUMENTS.value
    assert f"argv[0]: {program}: not visible inside the sandbox" in info.value.message
    widened = tools_for(tmp_path, read_only=[str(outside)])
    assert (await run(widened, [str(program)], tmp_path / "root")).stdout == "ran\n"


def sandboxed_git(repo: Repo, **settings: Any) -> Any:
    return git_tools(repo, backend="bubblewrap", sandbox=settings.pop("sandbox", {}), **settings)


async def test_git_runs_in_the_sandbox_and_writes_only_when_allowed(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("first", **{"a.txt": "a\n"})
    repo.write("a.txt", "changed\n")
    tools = sandboxed_git(repo)
    status = await run_git(tools, operation="status")
    assert status.exit_code == 0
    assert "a.txt" in status.stdout
    added = await run_git(tools, operation="add", paths=["a.txt"])
    assert added.exit_code == 0, added.stderr
    committed = await run_git(tools, operation="commit", message="second")
    assert committed.exit_code == 0, committed.stderr
    assert repo.git("log", "--format=%s", "-1").strip() == "second"
    # Without writes the repository is bound read-only: git itself cannot change it.
    reader = sandboxed_git(repo, allow_write=False)
    args = GitArgs.model_validate({"operation": "status"})
    preview = await activity_env(activity_type="git").run(reader.prepare_git, args, call())
    assert preview.preview[0].text is not None
    assert f"  read-only  {repo.path}" in preview.preview[0].text
    repo.write("a.txt", "again\n")
    read = await run_git(reader, operation="diff")
    assert read.exit_code == 0
    assert "+again" in read.stdout


async def test_git_s_fsmonitor_stays_neutralised_in_the_sandbox(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("first", **{"a.txt": "a\n"})
    marker = repo.path / "pwned"
    repo.config("core.fsmonitor", f"touch {marker}")
    result = await run_git(sandboxed_git(repo), operation="status")
    assert result.exit_code == 0
    assert not marker.exists()


def offered(settings: ProcessFamilySettings) -> dict[str, tuple[str, ...]]:
    return {
        spec.name: tuple(spec.capabilities)  # type: ignore[arg-type]
        for spec in PROCESSES.offered(settings)
    }


def test_capabilities_follow_the_boundary() -> None:
    host = offered(ProcessFamilySettings())
    assert host == {
        "execute_command": ("process.execute",),
        "run_shell": ("process.execute", "shell.execute"),
    }
    closed = offered(ProcessFamilySettings.model_validate({"processes": {"backend": "bubblewrap"}}))
    assert closed == {
        "execute_command": ("process.sandboxed",),
        "run_shell": ("process.sandboxed", "shell.execute"),
    }
    networked = offered(
        ProcessFamilySettings.model_validate(
            {"processes": {"backend": "bubblewrap", "sandbox": {"network": True}}}
        )
    )
    assert networked["execute_command"] == ("process.sandboxed", "network.write")
    [git] = GIT.offered(
        GitFamilySettings.model_validate({"git": {"backend": "bubblewrap", "allow_write": True}})
    )
    status = GitArgs.model_validate({"operation": "status"})
    assert sorted(git.capabilities_for(status)) == ["git.read", "process.sandboxed"]


def test_a_deployment_can_allow_sandboxed_commands_while_host_ones_need_approval() -> None:
    ceiling = CapabilityPolicy(
        rules={
            "process.execute": Effect.REQUIRE_APPROVAL,
            "process.sandboxed": Effect.ALLOW,
            "network.write": Effect.REQUIRE_APPROVAL,
        },
        default_effect=Effect.ALLOW,
    )

    def effect(capabilities: tuple[str, ...]) -> Effect:
        verdicts = evaluate(ceiling, "execute_command", capabilities, "deployment")
        return decide(verdicts, None, "execute_command", capabilities).effect

    assert effect(("process.execute",)) is Effect.REQUIRE_APPROVAL
    assert effect(("process.sandboxed",)) is Effect.ALLOW
    assert effect(("process.sandboxed", "network.write")) is Effect.REQUIRE_APPROVAL


@pytest.mark.parametrize(
    ("sandbox", "expected"),
    [
        ({"bwrap": "/nonexistent/bwrap"}, "processes.sandbox.bwrap: /nonexistent/bwrap: not an"),
        ({"user": "no-such-user-here"}, "processes.sandbox.user: 'no-such-user-here': no such"),
        ({"read_only": ["/nonexistent/ro"]}, "processes.sandbox.read_only.0: /nonexistent/ro"),
        ({"hide": ["/home/secret"]}, "'/home/secret': not under a system path"),
        ({"memory_bytes": 0}, "memory_bytes"),
    ],
)
def test_a_bad_sandbox_configuration_stops_the_worker(
    tmp_path: Path, sandbox: dict[str, Any], expected: str
) -> None:
    data = config(tmp_path, processes={"backend": "bubblewrap", "sandbox": sandbox})
    assert expected in problems(tmp_path, data)


async def test_the_resource_limits_hold(tmp_path: Path) -> None:
    root = tmp_path / "root"
    tools = tools_for(tmp_path, memory_bytes=256 * 1024**2, file_size_bytes=1024**2)
    grab = ["/usr/bin/python3", "-c", "b = bytearray(512 * 1024**2); print('got it')"]
    memory = await run(tools, grab, root)
    assert memory.exit_code != 0
    assert "MemoryError" in memory.stderr
    write = await run(tools, ["sh", "-c", "head -c 2097152 /dev/zero > big"], root)
    assert write.exit_code != 0
    assert (root / "big").stat().st_size == 1024**2
    # The same program is not refused on the host: the limit, not the machine, stopped it.
    host = tools_for(tmp_path, backend="host")
    assert (await run(host, grab, root)).stdout == "got it\n"


async def test_a_worker_killed_mid_command_leaves_no_sandboxed_process(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    marker = "4567.5"
    program = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from toolcalls.activities.processes.runner import ProcessSpec, run_process
        from toolcalls.activities.processes.settings import SandboxSettings

        root = Path({str(root)!r})
        spec = ProcessSpec(
            argv=["/bin/sh", "-c", "setsid sleep {marker} & sleep {marker} & wait"],
            cwd=str(root),
            env={{"PATH": "/usr/bin:/bin"}},
            timeout_seconds=60,
            max_output_bytes=1000,
            sandbox=SandboxSettings().grant(writable=[root], read_only=[]),
        )
        asyncio.run(run_process(spec, ledger=None, kill_grace=0.0))
        """
    )
    worker = await asyncio.create_subprocess_exec(sys.executable, "-c", program)
    try:
        await eventually(lambda: len(marked(f"sleep {marker}")) == 2, what="two sleeps running")
    finally:
        worker.kill()  # SIGKILL: no cleanup of its own runs
        await worker.wait()
    # No reaper runs here: bwrap dies with the worker, and the sandbox's namespace with bwrap.
    await eventually(lambda: marked(f"sleep {marker}") == [], timeout=10, what="no sleep left")


async def test_an_extra_path_gone_after_start_is_a_configuration_error(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    tools = tools_for(tmp_path, read_only=[str(extra)])
    extra.rmdir()
    with pytest.raises(ApplicationError) as info:
        await run(tools, ["true"], tmp_path / "root")
    assert info.value.type == ErrorCode.CONFIGURATION_ERROR.value
    assert info.value.message == (
        f"execute_command: processes.sandbox: {extra}: no such file or directory"
    )
