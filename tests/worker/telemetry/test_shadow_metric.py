"""``toolcalls_policy_shadow_disagreements_total`` on a real worker's Prometheus endpoint: a
shadow policy set that would deny a call counts it, and the call still runs."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.worker.support import Spawn, free_port, write_config
from tests.worker.telemetry.support import settled, total
from toolcalls.workflows.call import telemetry
from toolcalls.workflows.models.call import CallStatus, ToolCallRequest
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.reach.client import ToolCallClient


async def test_a_shadow_disagreement_is_counted_and_not_enforced(
    tmp_path: Path, spawn: Spawn, address: str, client: Client
) -> None:
    task_queue = f"shadow-{uuid.uuid4()}"
    (tmp_path / "current.cedar").write_text("permit(principal, action, resource);\n")
    (tmp_path / "next.cedar").write_text(
        'permit(principal, action, resource);\n@id("no-arithmetic")\n'
        'forbid(principal, action == Action::"calculator", resource);\n'
    )
    config = write_config(
        tmp_path,
        f'task_queue = "{task_queue}"\ntools = ["calculator", "current_datetime"]\n'
        f'[[policies]]\nname = "current"\nfiles = ["{tmp_path / "current.cedar"}"]\n'
        f'[[policies]]\nname = "next"\nmode = "shadow"\nfiles = ["{tmp_path / "next.cedar"}"]\n',
    )
    port = free_port()
    worker = spawn(
        "worker", "--config", str(config), "--address", address, "--metrics", f"127.0.0.1:{port}"
    )
    worker.wait_for_line("polling task queue", timeout=60)
    tools = ToolCallClient(client, task_queue=task_queue)
    alice = Principal(id="alice")
    calc = ToolCallRequest(tool="calculator", arguments={"expression": "6 * 7"}, principal=alice)
    result = await asyncio.wait_for(tools.call(calc), 60)
    assert result.status is CallStatus.COMPLETED
    agreed = ToolCallRequest(tool="current_datetime", principal=alice)
    assert (await asyncio.wait_for(tools.call(agreed), 60)).status is CallStatus.COMPLETED

    name = f"{telemetry.SHADOW_DISAGREEMENTS}_total"
    samples = await settled(port, name, 1)
    assert total(samples, name, tool="calculator", set="next") == 1
    assert total(samples, name) == 1
    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(30) == 0, "".join(worker.stderr)[-2000:]
