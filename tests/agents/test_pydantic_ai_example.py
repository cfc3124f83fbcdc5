"""examples/agents/pydantic_ai.py runs against the example deployment and approves its own call."""

from __future__ import annotations

import asyncio
import sys
import tomllib
from pathlib import Path

from temporalio.client import Client

from tests.worker.support import hermetic_env
from tests.worker.test_example_deployment import EXAMPLE, example_worker, scratch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "agents" / "pydantic_ai.py"

__all__ = ["scratch"]  # the fixture, for the test below


def listed(folder: Path) -> set[Path]:
    return set(folder.iterdir())


async def test_the_example_agent_creates_its_file_once_approved(
    client: Client, task_queue: str, tmp_path: Path, scratch: Path
) -> None:
    # The script reads the deployment's file for its data converter: the example's, on this
    # test's queue with its store under tmp_path, as the in-process worker serves it.
    config = tmp_path / "toolcalls.toml"
    config.write_text(EXAMPLE.read_text().replace('".toolcalls/', f'"{tmp_path}/'))
    assert tomllib.loads(config.read_text())["payloads"]["local"]["path"].startswith("/")
    address = client.service_client.config.target_host
    before = listed(scratch)
    async with example_worker(client, task_queue, tmp_path):
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SCRIPT),
            "--approve-as",
            "alice",
            "--task-queue",
            task_queue,
            cwd=ROOT,
            env=hermetic_env(
                tmp_path,
                TEMPORAL_ADDRESS=address,
                TOOLCALLS_CONFIG=str(config),
                PYTHONPATH=str(ROOT),
            ),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0].startswith("approving file-agent-")
    assert "/tools/create-1 as alice" in lines[0]
    created = listed(scratch) - before
    assert len(created) == 1
    (path,) = created
    try:
        assert path.read_text() == "written by a pydantic-ai agent, approved by a person\n"
        assert lines[-1].startswith("create_file said: {")
        assert f'"path": "{path}"' in lines[-1]
    finally:
        path.unlink()
