"""A descendant that leaves the process group (a new session) and keeps stdout/stderr open.

The call still ends, its pipes are closed in the worker when it does, and a warning names the
process that escaped. Every process here is real; the escaped one is killed by the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import SYSTEM_PATH, activity_env, alive, call
from toolcalls.activities.processes.command_args import ExecuteCommandArgs
from toolcalls.activities.processes.commands import ProcessTools
from toolcalls.activities.processes.runner import ProcessResult

SLEEP = shutil.which("sleep", path=SYSTEM_PATH)


def escaping(then: str) -> list[str]:
    """A python program whose child starts its own session and becomes ``sleep 60`` with the
    call's stdout and stderr; the program waits until it has escaped, then runs ``then``."""
    assert SLEEP is not None
    script = "\n".join(
        [
            "import os, time",
            "ready, tell = os.pipe()",
            "if os.fork() == 0:",
            "    os.setsid()",
            "    print(f'escaped={os.getpid()}', flush=True)",
            "    os.write(tell, b'x')",
            f"    os.execv({SLEEP!r}, ['sleep', '60'])",
            "os.read(ready, 1)",
            then,
        ]
    )
    return ["python3", "-c", script]


def pipes_held(pid: int | str) -> set[str]:
    """The pipes (``pipe:[inode]``) process ``pid`` has open."""
    links = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("pipe:"):
                links.add(link)
    return links


@contextlib.contextmanager
def escaped_from(result: ProcessResult) -> Iterator[int]:
    """The pid the program reported, killed when the test is done with it."""
    pid = int(result.stdout.split("escaped=")[1].split()[0])
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("then", "timeout", "timed_out"),
    [("pass", 30.0, False), ("time.sleep(100)", 1.0, True)],
    ids=["exits", "times-out"],
)
async def test_an_escaped_process_holding_the_pipes_gets_them_closed_and_is_named(
    tools: ProcessTools,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    then: str,
    timeout: float,
    timed_out: bool,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolcalls.activities.processes.runner")
    args = ExecuteCommandArgs(
        argv=escaping(then),
        cwd=str(tmp_path / "root"),
        env={"PATH": SYSTEM_PATH},
        timeout_seconds=timeout,
    )
    # Bounded only to catch a hang: the escaped sleep holds the pipes for 60 s.
    result = await asyncio.wait_for(activity_env().run(tools.execute_command, args, call()), 50)
    assert result.timed_out is timed_out
    with escaped_from(result) as pid:
        # It runs on outside the group, holding its ends of both pipes; the worker holds none.
        assert alive(pid)
        theirs = pipes_held(pid)
        assert {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (1, 2)} <= theirs
        assert len(theirs) >= 2
        assert pipes_held("self").isdisjoint(theirs)
        [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
        message = warning.getMessage()
        assert f"pid {pid} (sleep 60)" in message
        assert "python3" in message


async def test_a_call_without_escapes_leaves_no_pipe_open_and_warns_nothing(
    tools: ProcessTools, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolcalls.activities.processes.runner")
    before = pipes_held("self")
    args = ExecuteCommandArgs(
        argv=["sh", "-c", "echo out; echo err >&2; sleep 100 &"],
        cwd=str(tmp_path / "root"),
        env={"PATH": SYSTEM_PATH},
    )
    result = await activity_env().run(tools.execute_command, args, call())
    assert (result.exit_code, result.stdout, result.stderr) == (0, "out\n", "err\n")
    assert pipes_held("self") <= before
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
