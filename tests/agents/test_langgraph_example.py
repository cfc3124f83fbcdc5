"""examples/agents/langgraph.py runs against the example deployment and approves its own call."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from temporalio.client import Client

from tests.worker.test_example_deployment import SCRATCH, example_worker
from toolcalls.workflows.reach.client import ToolCallClient

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "agents" / "langgraph.py"


async def example(client: Client, task_queue: str, *args: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TOOLCALLS_CONFIG": str(ROOT / "examples" / "toolcalls.toml"),
        "PYTHONPATH": str(ROOT),
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        "--task-queue",
        task_queue,
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_the_example_agent_writes_its_file_once_approved(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    SCRATCH.mkdir(exist_ok=True)
    before = set(SCRATCH.glob("langgraph-*.txt"))
    async with example_worker(client, task_queue, tmp_path):
        process = await example(client, task_queue, "--approve-as", "demo")
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    [written] = set(SCRATCH.glob("langgraph-*.txt")) - before
    try:
        assert written.read_text() == "written by a LangGraph agent\n"
        answer = out.decode()
        assert f"I asked to write {written}; the tool said:" in answer
        assert '"path": "' + str(written) + '"' in answer
    finally:
        written.unlink()


async def test_without_approve_as_it_prints_the_command_and_waits_for_a_person(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    SCRATCH.mkdir(exist_ok=True)
    before = set(SCRATCH.glob("langgraph-*.txt"))
    async with example_worker(client, task_queue, tmp_path):
        process = await example(client, task_queue)
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        assert line.startswith("waiting for an approval: toolcalls approve ")
        call = line.split("toolcalls approve ")[1].split()[0]
        assert not set(SCRATCH.glob("langgraph-*.txt")) - before
        await ToolCallClient(client, task_queue=task_queue).approve(call, approver="person")
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    [written] = set(SCRATCH.glob("langgraph-*.txt")) - before
    written.unlink()
    assert f"I asked to write {written}; the tool said:" in out.decode()
