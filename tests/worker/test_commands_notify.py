"""``toolcalls call --no-wait --notify WEBHOOK`` as a real subprocess: the command returns at
once, and the webhook hears, signed, how the call ended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.support.harness import make_config, running_worker
from tests.support.http_servers import serve, text
from tests.worker.support import command, one_line, write_config
from tests.workflows.test_webhook_deliveries import ENV, SECRET, hmac_of, posts
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus


async def test_no_wait_notify_posts_the_end_of_the_call(
    tmp_path: Path, client: Client, address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, SECRET)  # the worker's environment: it signs
    with serve({"/done": text("ok")}) as server:
        url = server.url("/done")
        hook = {"name": "app", "url": url, "secret_env": ENV, "allow_private_address": True}
        config = write_config(
            tmp_path,
            f'task_queue = "{task_queue}"\ntools = ["calculator"]\n'
            "[[notifications.webhooks]]\n"
            f'name = "app"\nurl = "{url}"\nsecret_env = "{ENV}"\nallow_private_address = true\n',
        )
        deployment = make_config(task_queue, notifications={"webhooks": [hook]})
        async with running_worker(client, deployment):
            started = await command(
                tmp_path,
                address,
                *("call", "calculator", '{"expression": "6 * 7"}', "--no-wait"),
                *("--notify", url, "--config", str(config), "--json"),
            )
            assert started.code == 0, started.stderr
            workflow_id = json.loads(started.stdout)["workflow_id"]
            [seen] = await posts(server, 1)
            handle = client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id)
            result = await handle.result()
        refused = await command(
            tmp_path,
            address,
            *("call", "calculator", '{"expression": "1"}', "--no-wait"),
            *("--notify", "https://elsewhere.test/hook", "--config", str(config)),
        )
    assert result.status is CallStatus.COMPLETED
    assert seen.headers["x-toolcalls-signature"] == hmac_of(SECRET, seen)
    body = json.loads(seen.body)
    assert (body["event"], body["workflow_id"], body["status"]) == (
        "finished",
        workflow_id,
        "completed",
    )
    assert refused.code == 2
    assert one_line(refused.stderr) == (
        "toolcalls: call: --notify: 'https://elsewhere.test/hook' is no webhook of "
        f"{config} ([[notifications.webhooks]]: app)"
    )
