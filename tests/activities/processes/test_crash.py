"""A worker killed with SIGKILL mid-command, and the ledger that lets its successor clean up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import make_config, running_worker, start_call
from tests.support.processes import alive, eventually, live_members
from tests.support.tools import ALL_TOOL_NAMES
from tests.worker.support import Spawned, hermetic_env
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.workflows.models.call import CallStatus, ErrorCode

LOST_AFTER = {"start_to_close_seconds": 30, "heartbeat_seconds": 2}
"""A lost worker shows within two seconds; the longest command must fit 30 (max 20 s)."""


def sleeping_group() -> subprocess.Popen[bytes]:
    """A process group like a command leaves: a shell waiting on a background child."""
    return subprocess.Popen(
        ["sh", "-c", "sleep 100 & wait"],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def record_from_another_process(ledger: Path, pgid: int) -> None:
    """Record ``pgid`` as a worker would, from a process that then exits (the dead worker)."""
    code = (
        "import sys; from pathlib import Path; "
        "from toolcalls.activities.processes.ledger import ProcessLedger; "
        "ProcessLedger(Path(sys.argv[1])).record(int(sys.argv[2]))"
    )
    subprocess.run([sys.executable, "-c", code, str(ledger), str(pgid)], check=True)


def group_of(process: subprocess.Popen[bytes]) -> list[int]:
    return live_members(process.pid)


async def test_reap_kills_the_groups_of_a_dead_worker(tmp_path: Path) -> None:
    group = sleeping_group()
    try:
        await eventually(lambda: len(group_of(group)) == 2, what="shell and sleep running")
        record_from_another_process(tmp_path / "ledger", group.pid)
        assert ProcessLedger(tmp_path / "ledger").reap() == [group.pid]
        await eventually(lambda: group_of(group) == [], what="the group killed")
        assert list((tmp_path / "ledger").iterdir()) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group.pid, signal.SIGKILL)
        group.wait()


def test_reap_removes_entries_half_written_by_a_dead_worker_only(tmp_path: Path) -> None:
    ledger = ProcessLedger(tmp_path / "ledger")
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_owner = int(gone.stdout)
    stale = ledger.directory / f".4242.{dead_owner}.tmp"
    mine = ledger.directory / f".4243.{os.getpid()}.tmp"
    unrelated = ledger.directory / "notes.txt"
    for path in (stale, mine, unrelated):
        path.write_text("{", encoding="ascii")
    assert ledger.reap() == []
    assert sorted(entry.name for entry in ledger.directory.iterdir()) == sorted(
        [mine.name, unrelated.name]
    )


async def test_reap_leaves_the_groups_of_a_live_worker_alone(tmp_path: Path) -> None:
    group = sleeping_group()
    try:
        await eventually(lambda: len(group_of(group)) == 2, what="shell and sleep running")
        ledger = ProcessLedger(tmp_path / "ledger")
        ledger.record(group.pid)  # this test process is the live worker sharing the directory
        assert ProcessLedger(tmp_path / "ledger").reap() == []
        assert len(group_of(group)) == 2
        assert [entry.name for entry in ledger.directory.iterdir()] == [str(group.pid)]
        ledger.forget(group.pid)
        assert list(ledger.directory.iterdir()) == []
    finally:
        os.killpg(group.pid, signal.SIGKILL)
        group.wait()


async def test_a_reap_during_a_live_worker_s_record_keeps_its_entry(tmp_path: Path) -> None:
    group = sleeping_group()
    try:
        await eventually(lambda: len(group_of(group)) == 2, what="shell and sleep running")
        ledger = ProcessLedger(tmp_path / "ledger")
        ledger.record(group.pid)  # this test process is the live worker sharing the directory
        entry = ledger.directory / str(group.pid)
        stop = threading.Event()

        def keep_recording() -> None:
            while not stop.is_set():
                ledger.record(group.pid)

        writer = threading.Thread(target=keep_recording)
        writer.start()
        try:
            lost = 0
            for _ in range(3000):
                ProcessLedger(ledger.directory).reap()  # a worker starting next to this one
                lost += not entry.exists()
        finally:
            stop.set()
            writer.join()
        assert lost == 0  # a half-written entry must not read as an unowned one
        assert len(group_of(group)) == 2
    finally:
        os.killpg(group.pid, signal.SIGKILL)
        group.wait()


def worker_config(tmp_path: Path, task_queue: str, host_queue: str, root: Path) -> Path:
    path = tmp_path / "host-worker.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            task_queue = "{task_queue}"
            tools = ["execute_command"]
            state_dir = "{tmp_path / "state"}"

            [worker]
            queue = "{host_queue}"
            serve_workflows = false

            [process]
            roots = ["{root}"]
            max_timeout_seconds = 20

            [activities.task_queues]
            execute_command = "{host_queue}"

            [activities.timeouts.execute_command]
            start_to_close_seconds = {LOST_AFTER["start_to_close_seconds"]}
            heartbeat_seconds = {LOST_AFTER["heartbeat_seconds"]}

            [ceiling]
            default_effect = "allow"
            """
        ),
        encoding="utf-8",
    )
    return path


async def test_a_worker_killed_mid_command_leaves_an_uncertain_call_and_no_orphans(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    host_queue = f"{task_queue}-host"
    shared = {
        "tools": [*ALL_TOOL_NAMES, "execute_command"],
        "state_dir": str(tmp_path / "state"),
        "process": {"roots": [str(root)], "max_timeout_seconds": 20},
        "activities": {
            "task_queues": {"execute_command": host_queue},
            "timeouts": {"execute_command": LOST_AFTER},
        },
        "ceiling": {"default_effect": "allow"},
    }
    runs, sleeper_file, shell_file = tmp_path / "runs", tmp_path / "sleeper", tmp_path / "shell"
    script = (
        f"echo run >> {runs}; sleep 300 & echo $! > {sleeper_file}; echo $$ > {shell_file}; wait"
    )

    host = Spawned(
        [
            sys.executable,
            *(
                "-m",
                "toolcalls.worker",
                "--config",
                str(worker_config(tmp_path, task_queue, host_queue, root)),
            ),
            *("--address", client.service_client.config.target_host),
        ],
        hermetic_env(tmp_path),
        cwd=tmp_path,
    )
    sleeper = 0
    try:
        await asyncio.to_thread(host.wait_for_line, "polling task queue", 60)
        async with running_worker(client, make_config(task_queue, **shared)):
            handle = await start_call(
                client,
                task_queue,
                "execute_command",
                {"argv": ["/bin/sh", "-c", script], "cwd": str(root), "env": []},
            )
            await eventually(
                lambda: shell_file.exists() and shell_file.read_text().strip() != "",
                timeout=30,
                what="the command running on the host worker",
            )
            sleeper, pgid = int(sleeper_file.read_text()), int(shell_file.read_text())
            entry = tmp_path / "state" / "process-groups" / str(pgid)
            await eventually(entry.exists, what="the group recorded in the ledger")
            os.kill(host.pid, signal.SIGKILL)
            host.kill()
            # The shell dies with the worker (PR_SET_PDEATHSIG); its background child does not.
            await eventually(lambda: not alive(pgid), what="the shell gone with its worker")
            assert alive(sleeper)
            result = await asyncio.wait_for(handle.result(), 30)
        assert result.status is CallStatus.UNCERTAIN
        assert result.error is not None
        assert result.error.code is ErrorCode.UNCERTAIN
        assert "heartbeat timeout" in result.error.message
        assert runs.read_text(encoding="utf-8") == "run\n"
        assert live_members(pgid) == [sleeper]

        # The next worker serving the tool kills what the ledger says the dead one left.
        host_config = make_config(
            task_queue, **shared, worker={"queue": host_queue, "serve_workflows": False}
        )
        async with running_worker(client, host_config):
            await eventually(lambda: live_members(pgid) == [], what="the leftover group killed")
        assert list((tmp_path / "state" / "process-groups").iterdir()) == []
        assert runs.read_text(encoding="utf-8") == "run\n"
    finally:
        host.kill()
        if sleeper and alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)
