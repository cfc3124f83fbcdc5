"""Helpers for the process tool tests: real process groups, activity contexts, tool families."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext
from toolcalls.activities.processes.commands import ProcessTools
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.settings import ProcessSettings, ShellSettings

SYSTEM_PATH = "/usr/bin:/bin"
"""The ``PATH`` tests give commands that look programs up by bare name."""


def live_members(pgid: int) -> list[int]:
    """Members of process group ``pgid`` still running (``pgrep -g``, zombies left out)."""
    found = subprocess.run(
        ["pgrep", "-g", str(pgid)], capture_output=True, text=True, check=False
    ).stdout.split()
    return [int(pid) for pid in found if process_state(int(pid)) not in (None, "Z", "X")]


def process_state(pid: int) -> str | None:
    """The state letter in ``/proc/<pid>/stat`` (``R``, ``S``, ``Z``...); ``None`` if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()[0]


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


async def eventually(
    predicate: Callable[[], bool], timeout: float = 30, what: str = "condition"
) -> None:
    """Poll ``predicate`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        await asyncio.sleep(0.02)


def activity_env(
    *,
    activity_type: str = "execute_command",
    heartbeat: float | None = 0.3,
    start_to_close: float = 330,
    schedule_to_close: float | None = None,
) -> ActivityEnvironment:
    """An activity context that started now, with the given timeouts."""
    env = ActivityEnvironment()
    now = datetime.now(UTC)
    env.info = dataclasses.replace(
        env.info,
        activity_type=activity_type,
        workflow_type="ToolCallWorkflow",
        started_time=now,
        scheduled_time=now,
        current_attempt_scheduled_time=now,
        start_to_close_timeout=timedelta(seconds=start_to_close),
        schedule_to_close_timeout=(
            timedelta(seconds=schedule_to_close) if schedule_to_close is not None else None
        ),
        heartbeat_timeout=timedelta(seconds=heartbeat) if heartbeat is not None else None,
    )
    return env


def call(precondition: dict[str, Any] | None = None) -> CallContext:
    return CallContext(
        workflow_id="wf",
        call_id="call",
        idempotency_key="wf:call",
        approval=None,
        precondition=precondition,
    )


def make_tools(
    tmp_path: Path,
    root: Path | None = None,
    *,
    kill_grace: float = 0.5,
    shell: dict[str, Any] | None = None,
    **process: Any,
) -> ProcessTools:
    """A ``ProcessTools`` confined to ``root`` (default ``tmp_path/root``), ledger in tmp."""
    root = root or tmp_path / "root"
    root.mkdir(exist_ok=True)
    return ProcessTools(
        ProcessSettings(roots=[root], kill_grace_seconds=kill_grace, **process),
        ShellSettings(**{"cwd": root, "kill_grace_seconds": kill_grace, **(shell or {})}),
        ProcessLedger(tmp_path / "ledger"),
    )


def executable(path: Path, script: str) -> Path:
    """Write an executable shell script at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(0o755)
    return path
