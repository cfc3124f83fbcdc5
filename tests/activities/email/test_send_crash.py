"""A worker killed with SIGKILL while its message is with the SMTP server: the call is uncertain,
names its Message-ID, and the message is never sent a second time."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import trustme
from temporalio.client import Client

from tests.activities.email.smtpd import PASSWORD, USERNAME, Sink, smtp_server
from tests.activities.email.support import PASSWORD_ENV
from tests.support.harness import make_config, running_worker, start_call
from tests.support.tools import ALL_TOOL_NAMES
from tests.worker.support import Spawned, hermetic_env
from toolcalls.activities.email.compose import message_id_for
from toolcalls.workflows.models.call import CallStatus, ErrorCode

LOST_AFTER = {"start_to_close_seconds": 60, "heartbeat_seconds": 2}
"""A lost worker shows within two seconds of its last heartbeat."""


def email_section(port: int, ca_file: Path) -> dict[str, object]:
    return {
        "backend": "imap",
        "username": USERNAME,
        "password_env": PASSWORD_ENV,
        "imap_host": "127.0.0.1",
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        "sender": "me@example.org",
        "ca_file": str(ca_file),
        "timeout_seconds": 40,
    }


def host_config(tmp_path: Path, task_queue: str, host_queue: str, port: int, ca: Path) -> Path:
    section = "\n".join(
        f"{key} = {value}" if isinstance(value, int) else f'{key} = "{value}"'
        for key, value in email_section(port, ca).items()
    )
    path = tmp_path / "host-worker.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            task_queue = "{task_queue}"
            tools = ["send_email"]
            state_dir = "{tmp_path / "state"}"

            [worker]
            queue = "{host_queue}"
            serve_workflows = false

            [activities.task_queues]
            send_email = "{host_queue}"

            [activities.timeouts.send_email]
            start_to_close_seconds = {LOST_AFTER["start_to_close_seconds"]}
            heartbeat_seconds = {LOST_AFTER["heartbeat_seconds"]}

            [ceiling]
            default_effect = "allow"
            """
        )
        + "\n[email]\n"
        + section
        + "\n",
        encoding="utf-8",
    )
    return path


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
        host = Spawned(
            [
                sys.executable,
                *("-m", "toolcalls.worker", "--config"),
                str(host_config(tmp_path, task_queue, host_queue, server.port, ca_file)),
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
                await asyncio.to_thread(sink.data_started.wait, 30)
                os.kill(host.pid, signal.SIGKILL)  # the server holds the message, unanswered
                host.kill()
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
