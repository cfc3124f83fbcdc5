"""A worker killed with SIGKILL while its message is with the SMTP server: the call is uncertain,
names its Message-ID, and the message is never sent a second time."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest
import trustme
from temporalio.client import Client

from tests.activities.email.crash import (
    LOST_AFTER,
    email_section,
    host_config,
    lose_host_during_send,
)
from tests.activities.email.smtpd import PASSWORD, Sink, smtp_server
from tests.activities.email.support import PASSWORD_ENV
from tests.support.harness import make_config, running_worker, start_call
from tests.support.tools import ALL_TOOL_NAMES
from tests.worker.support import Spawned, hermetic_env
from toolcalls.activities.email.compose import message_id_for
from toolcalls.workflows.models.call import CallStatus, ErrorCode


async def test_a_worker_killed_during_the_send_leaves_one_message_and_an_uncertain_call(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    mail_ca: trustme.CA,
    ca_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)  # for the workers of this process
    host_queue = f"{task_queue}-host"
    sink = Sink(hold=threading.Event())
    shared = {
        "tools": [*ALL_TOOL_NAMES, "send_email"],
        "state_dir": str(tmp_path / "state"),
        "activities": {
            "task_queues": {"send_email": host_queue},
            "timeouts": {"send_email": LOST_AFTER},
        },
        "ceiling": {"default_effect": "allow"},
    }
    with smtp_server(mail_ca, "tls", sink) as server:
        section = email_section(server.port, ca_file)
        host = Spawned(
            [
                sys.executable,
                *("-m", "toolcalls.worker", "--config"),
                str(host_config(tmp_path, task_queue, host_queue, section)),
                *("--address", client.service_client.config.target_host),
            ],
            hermetic_env(tmp_path, **{PASSWORD_ENV: PASSWORD}),
            cwd=tmp_path,
        )
        try:
            await asyncio.to_thread(host.wait_for_line, "polling task queue", 60)
            config = make_config(task_queue, **shared, email=email_section(server.port, ca_file))
            async with running_worker(client, config):
                handle = await start_call(
                    client,
                    task_queue,
                    "send_email",
                    {"to": ["bob@example.org"], "subject": "Once", "body": "Only once."},
                )
                await lose_host_during_send(host, sink, handle)
                result = await asyncio.wait_for(handle.result(), 30)
                sink.hold.set()  # type: ignore[union-attr]

                # Another worker serving the tool picks up nothing: the one attempt was spent.
                host_worker = make_config(
                    task_queue,
                    **shared,
                    email=email_section(server.port, ca_file),
                    worker={"queue": host_queue, "serve_workflows": False},
                )
                async with running_worker(client, host_worker):
                    await asyncio.sleep(3)
        finally:
            host.kill()
    expected = message_id_for(f"{result.workflow_id}:{result.call_id}", "example.org")
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert "heartbeat timeout" in result.error.message
    assert result.output == {"tool": "send_email", "message_id": expected}
    assert len(sink.received) == 1
    assert sink.received[0].message["Message-ID"] == expected
