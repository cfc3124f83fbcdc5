"""examples/agents/pydantic_ai.py runs against the example deployment and approves its own call."""

from __future__ import annotations

import asyncio
import sys
import tomllib
from pathlib import Path

from temporalio.client import Client

from tests.worker.support import TOOLCALLS, hermetic_env
from tests.worker.test_example_deployment import EXAMPLE, example_worker, scratch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "agents" / "pydantic_ai.py"

__all__ = ["scratch"]  # the fixture, for the test below


def listed(folder: Path) -> set[Path]:
    return set(folder.iterdir())


def deployment_file(tmp_path: Path) -> Path:
    """The example's file, with its store under ``tmp_path`` as the in-process worker has it:
    the script reads it for its data converter."""
    config = tmp_path / "toolcalls.toml"
    config.write_text(EXAMPLE.read_text().replace('".toolcalls/', f'"{tmp_path}/'))
    assert tomllib.loads(config.read_text())["payloads"]["local"]["path"].startswith("/")
    return config


async def spawn(client: Client, tmp_path: Path, *args: str) -> asyncio.subprocess.Process:
    """``args`` (a command) as a user runs it from the repository's root, with the test's server
    and the example deployment's file."""
    return await asyncio.create_subprocess_exec(
        *args,
        cwd=ROOT,
        env=hermetic_env(
            tmp_path,
            TEMPORAL_ADDRESS=client.service_client.config.target_host,
            TOOLCALLS_CONFIG=str(deployment_file(tmp_path)),
            PYTHONPATH=str(ROOT),
        ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


def check_created(scratch: Path, before: set[Path], answer: str) -> None:
    """One new file in the scratch folder, with the agent's text, quoted in its answer."""
    created = listed(scratch) - before
    assert len(created) == 1
    (path,) = created
    try:
        assert path.read_text() == "written by a pydantic-ai agent, approved by a person\n"
        assert answer.startswith("create_file said: {")
        assert f'"path": "{path}"' in answer
    finally:
        path.unlink()


async def test_the_example_agent_approves_its_own_call(
    client: Client, task_queue: str, tmp_path: Path, scratch: Path
) -> None:
    before = listed(scratch)
    async with example_worker(client, task_queue, tmp_path):
        script = [str(SCRIPT), "--approve-as", "alice", "--task-queue", task_queue]
        process = await spawn(client, tmp_path, sys.executable, *script)
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0].startswith("approving file-agent-")
    assert lines[0].endswith("/tools/create-1 as alice")
    check_created(scratch, before, lines[-1])


async def test_the_example_agent_waits_for_the_command_it_prints(
    client: Client, task_queue: str, tmp_path: Path, scratch: Path
) -> None:
    before = listed(scratch)
    async with example_worker(client, task_queue, tmp_path):
        script = [str(SCRIPT), "--task-queue", task_queue]
        process = await spawn(client, tmp_path, sys.executable, *script)
        assert process.stdout is not None
        first = (await asyncio.wait_for(process.stdout.readline(), 60)).decode().strip()
        prefix = "waiting for a person: toolcalls approve "
        assert first.startswith(prefix), first
        assert first.endswith(" --by NAME")
        assert listed(scratch) == before
        command = first.removeprefix("waiting for a person: ").replace("NAME", "bob").split()
        approve = await spawn(client, tmp_path, TOOLCALLS, *command[1:])
        _, approve_err = await asyncio.wait_for(approve.communicate(), 60)
        assert approve.returncode == 0, approve_err.decode()
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    check_created(scratch, before, out.decode().splitlines()[-1])
