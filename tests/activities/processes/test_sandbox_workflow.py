"""The sandbox through a real ``ToolCallWorkflow``: one ceiling lets sandboxed commands run
unattended while host commands and sandboxed ones with the network wait for a human."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.activities.processes.test_workflow import approve, command, config
from tests.support.harness import pending_approval, run_call, running_worker, start_call
from toolcalls.workflows.models.call import CallStatus

pytestmark = pytest.mark.skipif(not shutil.which("bwrap"), reason="make test installs bubblewrap")

CEILING = {
    "default_effect": "allow",
    "rules": {
        "process.execute": "require_approval",
        "process.sandboxed": "allow",
        "network.write": "require_approval",
    },
}


async def test_a_sandboxed_command_runs_without_approval_where_a_host_one_waits(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    arguments = command(root, ["sh", "-c", "echo made > made; ls /"])
    sandboxed = config(
        task_queue, tmp_path, root, ceiling=CEILING, processes={"backend": "bubblewrap"}
    )
    async with running_worker(client, sandboxed):
        result = await run_call(client, task_queue, "execute_command", arguments)
    assert result.status is CallStatus.COMPLETED
    assert result.capabilities == ["process.sandboxed"]
    assert result.approval is None
    assert isinstance(result.output, dict)
    assert "home" not in result.output["stdout"].split()
    assert (root / "made").read_text() == "made\n"

    (root / "made").unlink()
    host = config(task_queue, tmp_path, root, ceiling=CEILING)
    async with running_worker(client, host):
        handle = await start_call(client, task_queue, "execute_command", arguments)
        pending = await pending_approval(handle)
        assert pending.reasons == [
            "process.execute: require_approval (deployment rule process.execute)"
        ]
        assert not (root / "made").exists()
        result = await approve(handle)
    assert result.status is CallStatus.COMPLETED
    assert result.capabilities == ["process.execute"]


async def test_a_sandbox_with_the_network_waits_and_shows_its_grant(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    networked = config(
        task_queue,
        tmp_path,
        root,
        ceiling=CEILING,
        processes={"backend": "bubblewrap", "sandbox": {"network": True}},
    )
    async with running_worker(client, networked):
        handle = await start_call(
            client, task_queue, "execute_command", command(root, ["sh", "-c", "echo ok"])
        )
        pending = await pending_approval(handle)
        assert pending.reasons == [
            "network.write: require_approval (deployment rule network.write)"
        ]
        [process] = [artifact for artifact in pending.preview if artifact.kind == "process"]
        assert process.text is not None
        assert "inside a bubblewrap sandbox, grant sha256:" in process.text
        assert "network: SHARED with the host" in process.text
        assert f"  read-write {root}" in process.text
        result = await approve(handle)
    assert result.status is CallStatus.COMPLETED
    assert isinstance(result.output, dict)
    assert result.output["stdout"] == "ok\n"
