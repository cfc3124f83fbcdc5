"""The deployment ``make run`` serves (examples/toolcalls.toml) has something to approve."""

from __future__ import annotations

import asyncio
import tomllib
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from tests.support.harness import decision, pending_approval, start_call
from toolcalls.worker.config import parse_config
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "toolcalls.toml"
SCRATCH = Path("/tmp/toolcalls-scratch")


def example_worker(client: Client, task_queue: str, state: Path) -> Worker:
    """The example's worker, on the test's task queue and with its files under ``state``."""
    data = tomllib.loads(EXAMPLE.read_text())
    data["task_queue"] = task_queue
    data["state_dir"] = str(state / "state")
    data["files"]["checkpoints"] = str(state / "checkpoints.db")
    data["payloads"]["local"]["path"] = str(state / "payloads")
    return build_worker(client, parse_config(data, str(EXAMPLE)))


@pytest.fixture
def scratch() -> Path:
    """The folder ``make run`` creates."""
    SCRATCH.mkdir(exist_ok=True)
    return SCRATCH


async def test_create_file_waits_for_an_approval_then_writes(
    client: Client, task_queue: str, tmp_path: Path, scratch: Path
) -> None:
    target = scratch / f"example-{uuid.uuid4().hex[:8]}.txt"
    async with example_worker(client, task_queue, tmp_path):
        handle = await start_call(
            client, task_queue, "create_file", {"path": str(target), "content": "hello\n"}
        )
        pending = await pending_approval(handle)
        assert pending.tool == "create_file"
        assert [r.split(":")[0] for r in pending.reasons] == ["filesystem.write"]
        assert "+hello" in (pending.preview[0].text or "")
        assert not target.exists()
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="me"))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output["path"] == str(target)
    assert target.read_text() == "hello\n"
    target.unlink()


async def test_reads_under_the_scratch_folder_need_no_approval(
    client: Client, task_queue: str, tmp_path: Path, scratch: Path
) -> None:
    target = scratch / f"example-{uuid.uuid4().hex[:8]}.txt"
    target.write_text("read me\n")
    try:
        async with example_worker(client, task_queue, tmp_path):
            handle = await start_call(client, task_queue, "read_file", {"path": str(target)})
            result = await asyncio.wait_for(handle.result(), 30)
    finally:
        target.unlink()
    assert result.status is CallStatus.COMPLETED, result.error
    assert "read me" in str(result.output)
