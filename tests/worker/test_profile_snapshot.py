"""A profile's snapshot identity from real worker processes: the same configuration gives the
same identity in every process, whatever its hash seed, and across a restart."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import run_call
from tests.worker.support import Spawn, hermetic_env, write_config
from toolcalls.worker.config import build_catalog, load_config
from toolcalls.workflows.models.call import CallStatus
from toolcalls.workflows.reach.client import ToolCallClient

CONFIG = """
task_queue = "{task_queue}"
tools = ["calculator", "current_datetime", "read_file", "list_files", "search_tools", "read_tool"]
state_dir = "{state}"

[files]
roots = ["{root}"]

[profiles.math]
tools = ["calculator", "search_tools", "read_tool"]

[profiles.reads]
tools = ["files.*", "search_tools"]
"""


async def test_two_worker_processes_give_each_profile_the_same_identity(
    spawn: Spawn, tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    path = write_config(
        tmp_path, CONFIG.format(task_queue=task_queue, state=tmp_path / "state", root=root)
    )
    catalog = build_catalog(load_config(path))  # this process's, for reference
    expected = {name: catalog.profile_digest(name) for name in ("math", "reads")}
    assert expected["math"] != expected["reads"]
    calls = ToolCallClient(client, task_queue=task_queue)
    seen = []
    # One worker after the other, as across a restart; each with its own hash seed, so nothing
    # that depends on the order of a set or a dict's hashing can pass for stable.
    for seed in ("1", "2"):
        worker = spawn(
            *("worker", "--config", str(path), "--address", address),
            env=hermetic_env(tmp_path, PYTHONHASHSEED=seed),
        )
        await asyncio.to_thread(worker.wait_for_line, "polling task queue", 60)
        recorded = {}
        for name, tool, arguments in (
            ("math", "calculator", {"expression": "1 + 1"}),
            ("reads", "list_files", {"path": str(root)}),
        ):
            result = await run_call(client, task_queue, tool, arguments, profile=name)
            assert result.status is CallStatus.COMPLETED, result.error
            exported = await calls.definitions(profile=name)
            assert exported.digest == result.profile_digest
            recorded[name] = result.profile_digest
        seen.append(recorded)
        os.killpg(worker.pid, signal.SIGTERM)
        assert await asyncio.to_thread(worker.finish, 30) == 0
    assert seen == [expected, expected]
