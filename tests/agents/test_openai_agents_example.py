"""examples/agents/openai_agents.py runs against the example deployment and prints the answer."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

from temporalio.client import Client

from tests.worker.support import hermetic_env
from tests.worker.test_example_deployment import SCRATCH, example_worker

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agents" / "openai_agents.py"
ANSWER = "I saved your note. The tool said: "


async def test_the_example_approves_its_own_call_and_prints_the_tool_s_result(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    SCRATCH.mkdir(exist_ok=True)
    address = client.service_client.config.target_host
    env = hermetic_env(tmp_path, TEMPORAL_ADDRESS=address, PYTHONPATH=str(ROOT))
    async with example_worker(client, task_queue, tmp_path / "deployment"):
        script = await asyncio.create_subprocess_exec(
            sys.executable,
            str(EXAMPLE),
            "--approve-as",
            "tester",
            "--task-queue",
            task_queue,
            cwd=tmp_path,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(script.communicate(), 120)
    assert script.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    waiting = re.fullmatch(
        r"the agent waits for an approval: toolcalls approve (\S+/tools/call_1) --by YOUR_NAME",
        lines[1],
    )
    assert waiting, lines
    assert lines[2] == f"approved {waiting[1]} as tester"
    assert lines[-1].startswith(ANSWER)
    written(json.loads(lines[-1].removeprefix(ANSWER)))


def written(output: dict[str, str]) -> None:
    """The note ``create_file`` reported is in the scratch folder with its text (and is gone)."""
    note = Path(output["path"])
    try:
        assert note.parent == SCRATCH
        assert note.read_text() == "Buy milk.\n"
        assert output["kind"] == "create"
    finally:
        note.unlink()
