"""``execute_command`` and ``run_shell`` inside a real bubblewrap sandbox: what a command cannot
reach, that nothing outlives the call, and that the same argv gives the same result in and out."""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tests.support.processes import SYSTEM_PATH, activity_env, call, eventually
from toolcalls.activities.processes.command_args import ExecuteCommandArgs, RunShellArgs
from toolcalls.activities.processes.commands import ProcessTools
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.runner import ProcessResult
from toolcalls.activities.processes.settings import (
    ProcessesSettings,
    ProcessSettings,
    ShellSettings,
)
from toolcalls.workflows.models.call import ErrorCode

pytestmark = pytest.mark.skipif(not shutil.which("bwrap"), reason="make test installs bubblewrap")

ENV = {"PATH": SYSTEM_PATH}


def tools_for(tmp_path: Path, backend: str = "bubblewrap", **sandbox: Any) -> ProcessTools:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    return ProcessTools(
        ProcessSettings(roots=[root], kill_grace_seconds=0.5),
        ShellSettings(cwd=root, env=ENV, kill_grace_seconds=0.5),
        ProcessLedger(tmp_path / "ledger"),
        processes=ProcessesSettings(backend=backend, sandbox=sandbox),
    )


async def run(
    tools: ProcessTools, argv: list[str], cwd: Path, timeout: float = 30, **more: Any
) -> ProcessResult:
    args = ExecuteCommandArgs(
        argv=argv, cwd=str(cwd), env=more.pop("env", ENV), timeout_seconds=timeout, **more
    )
    result: ProcessResult = await activity_env().run(tools.execute_command, args, call())
    return result


@pytest.fixture
def sandboxed(tmp_path: Path) -> ProcessTools:
    return tools_for(tmp_path)


@pytest.fixture
def host(tmp_path: Path) -> ProcessTools:
    return tools_for(tmp_path, backend="host")


async def test_a_secret_outside_the_roots_is_absent(
    sandboxed: ProcessTools, host: ProcessTools, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_rsa"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n", encoding="ascii")
    argv = ["cat", str(key)]
    env = {**ENV, "HOME": str(home)}
    outside = await run(host, argv, tmp_path / "root", env=env)
    assert outside.exit_code == 0
    assert "PRIVATE KEY" in outside.stdout
    inside = await run(sandboxed, argv, tmp_path / "root", env=env)
    assert inside.exit_code != 0
    assert "PRIVATE KEY" not in inside.stdout
    assert "No such file or directory" in inside.stderr
    shadow = await run(sandboxed, ["cat", "/etc/shadow"], tmp_path / "root")
    assert shadow.exit_code != 0
    assert "root:" not in shadow.stdout


async def test_writes_land_only_in_the_writable_roots(
    sandboxed: ProcessTools, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    script = f"echo in > {root}/made; echo out > {outside}/made; touch /usr/made; echo t > /tmp/x"
    result = await run(sandboxed, ["sh", "-c", script], root)
    assert (root / "made").read_text() == "in\n"
    assert not (outside / "made").exists()
    assert not Path("/usr/made").exists()  # noqa: ASYNC240
    assert "Read-only file system" in result.stderr


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


@pytest.mark.parametrize("network", [False, True])
async def test_the_network_is_absent_unless_granted(
    tmp_path: Path, server: str, network: bool
) -> None:
    tools = tools_for(tmp_path, network=network)
    fetch = f"import urllib.request as u; print(u.urlopen({server!r}, timeout=5).read().decode())"
    result = await run(tools, ["/usr/bin/python3", "-c", fetch], tmp_path / "root")
    if network:
        assert result.exit_code == 0
        assert result.stdout == "hello from the host\n"
    else:
        assert result.exit_code != 0
        assert "Connection refused" in result.stderr or "unreachable" in result.stderr


async def test_the_workers_processes_are_invisible_and_unsignalable(
    sandboxed: ProcessTools, tmp_path: Path
) -> None:
    worker = os.getpid()
    script = f"kill -0 {worker} && echo signalled; ls /proc | grep -c '^[0-9]'"
    result = await run(sandboxed, ["sh", "-c", script], tmp_path / "root")
    assert "signalled" not in result.stdout
    assert int(result.stdout.split()[-1]) <= 4  # bwrap's init, sh, ls and grep


def marked(marker: str) -> list[int]:
    """Host pids whose command line starts with ``marker``, seen from outside the sandbox."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                line = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if line.startswith(marker.encode()) and state not in ("Z", "X"):
                found.append(int(entry))
    return found


async def test_no_descendant_outlives_a_timeout(sandboxed: ProcessTools, tmp_path: Path) -> None:
    marker = "1234.5"
    script = f"sleep {marker} & setsid sleep {marker} & sleep {marker} & wait"
    task = asyncio.create_task(run(sandboxed, ["sh", "-c", script], tmp_path / "root", timeout=5))
    await eventually(lambda: len(marked(f"sleep {marker}")) == 3, what="three sleeps running")
    result = await task
    assert result.timed_out
    assert marked(f"sleep {marker}") == []


async def test_no_descendant_outlives_a_cancellation(
    sandboxed: ProcessTools, tmp_path: Path
) -> None:
    marker = "2345.5"
    args = ExecuteCommandArgs(
        argv=["sh", "-c", f"setsid sleep {marker} & sleep {marker} & wait"],
        cwd=str(tmp_path / "root"),
        env=ENV,
    )
    env = activity_env()
    task = asyncio.create_task(env.run(sandboxed.execute_command, args, call()))
    await eventually(lambda: len(marked(f"sleep {marker}")) == 2, what="two sleeps running")
    pids = marked(f"sleep {marker}")
    env.cancel()
    with pytest.raises(ApplicationError) as info:
        await task
    assert info.value.type == ErrorCode.CANCELED.value
    assert marked(f"sleep {marker}") == []
    assert all(pid not in marked("sleep") for pid in pids)


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user can enter (pytest's own are the worker's user's alone)."""
    path = Path(tempfile.mkdtemp(prefix="toolcalls-sandbox-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="a set-user-ID root file needs root to make")
async def test_a_setuid_binary_does_not_escalate(open_dir: Path) -> None:
    tools = tools_for(open_dir, user="nobody")
    root = open_dir / "root"
    os.chmod(root, 0o777)
    setuid_id = root / "id"
    shutil.copy("/usr/bin/id", setuid_id)
    os.chmod(setuid_id, 0o4755)
    # Outside, the same file run by the same user does escalate: the test can fail.
    host = await asyncio.to_thread(
        subprocess.run,
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(setuid_id), "-u"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert host.stdout.strip() == "0"
    result = await run(tools, [str(setuid_id), "-u"], root)
    assert result.exit_code == 0
    assert result.stdout.strip() == "65534"


@pytest.mark.parametrize(
    ("argv", "files"),
    [
        (["/usr/bin/python3", "-c", "import sys; print(sum(range(10)), sys.argv)"], {}),
        (["make", "-s"], {"Makefile": "all:\n\t@echo built $$((6 * 7))\n"}),
        (["git", "status", "--short"], {"a.txt": "a\n"}),
    ],
    ids=["python", "make", "git-status"],
)
async def test_the_same_argv_gives_the_same_result_in_and_out(
    sandboxed: ProcessTools, host: ProcessTools, tmp_path: Path, argv: list[str], files: Any
) -> None:
    root = tmp_path / "root"
    for name, text in files.items():
        (root / name).write_text(text)
    if argv[0] == "git":
        await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(root)], check=True)
    outside = await run(host, argv, root)
    inside = await run(sandboxed, argv, root)
    assert outside.exit_code == 0
    assert (inside.exit_code, inside.stdout, inside.stderr) == (
        outside.exit_code,
        outside.stdout,
        outside.stderr,
    )


async def test_run_shell_runs_in_the_sandbox(sandboxed: ProcessTools, tmp_path: Path) -> None:
    args = RunShellArgs(command="echo hi > made; ls / | tr '\\n' ' '; kill -0 1 && echo init")
    result = await activity_env(activity_type="run_shell").run(sandboxed.run_shell, args, call())
    assert (tmp_path / "root" / "made").read_text() == "hi\n"
    assert "home" not in result.stdout.split()
    assert "usr" in result.stdout.split()
    assert "root" not in result.stdout.split()


async def test_a_sandbox_that_cannot_start_fails_and_never_runs_on_the_host(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    missing = tools_for(tmp_path, bwrap="/nonexistent/bwrap")
    with pytest.raises(ApplicationError) as info:
        await run(missing, ["sh", "-c", f"touch {root}/ran"], root)
    assert info.value.type == ErrorCode.EXECUTION_FAILED.value
    assert info.value.message == (
        "execute_command: the sandbox cannot start: /nonexistent/bwrap: no such file or directory"
    )
    assert not (root / "ran").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="running bwrap as another user needs root")
async def test_a_sandbox_bwrap_refuses_fails_naming_bwrap_s_reason(tmp_path: Path) -> None:
    # The pytest directory is root's alone: bwrap, run as nobody, cannot bind the root.
    root = tmp_path / "root"
    tools = tools_for(tmp_path, user="nobody")
    with pytest.raises(ApplicationError) as info:
        await run(tools, ["sh", "-c", f"touch {root}/ran"], root)
    assert info.value.type == ErrorCode.EXECUTION_FAILED.value
    assert info.value.message.startswith(
        f"execute_command: the sandbox cannot start: bwrap: Can't find source path {root}"
    )
    assert not (root / "ran").exists()


async def test_the_preview_shows_the_grant_and_a_changed_grant_fails(tmp_path: Path) -> None:
    root = tmp_path / "root"
    approved = tools_for(tmp_path)
    args = ExecuteCommandArgs(argv=["sh", "-c", "echo ran > ran"], cwd=str(root), env=ENV)
    prepared = await activity_env().run(approved.prepare_execute_command, args, call())
    text = prepared.preview[0].text
    data = prepared.preview[0].data
    assert text is not None
    assert data is not None
    assert "inside a bubblewrap sandbox, grant sha256:" in text
    assert f"  read-write {root}" in text
    assert "  read-only  /usr" in text
    assert "network: none" in text
    assert "rlimits: cpu 300 s, memory 4 GiB, processes unlimited, file size 1 GiB" in text
    assert data["boundary"] == "bubblewrap"
    # The deployment now shares the network: what runs is no longer what was approved.
    widened = tools_for(tmp_path, network=True)
    with pytest.raises(ApplicationError) as info:
        await activity_env().run(widened.execute_command, args, call(prepared.precondition))
    assert info.value.type == ErrorCode.PRECONDITION_FAILED.value
    assert "the sandbox's grant (network)" in info.value.message
    assert not (root / "ran").exists()
    # The host backend is a change of boundary too.
    host = tools_for(tmp_path, backend="host")
    with pytest.raises(ApplicationError) as info:
        await activity_env().run(host.execute_command, args, call(prepared.precondition))
    assert "where it runs (a sandbox -> the host)" in info.value.message
    result = await activity_env().run(approved.execute_command, args, call(prepared.precondition))
    assert result.exit_code == 0
    assert (root / "ran").read_text() == "ran\n"
