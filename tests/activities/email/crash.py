"""The two workers of the email crash tests: a process serving ``send_email`` on a host queue
(the one killed) and, in the test process, the deployment's workflow worker."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHandle

from tests.activities.email.smtpd import USERNAME, Sink
from tests.activities.email.support import PASSWORD_ENV
from tests.support.harness import heartbeat_recorded
from tests.worker.support import Spawned

LOST_AFTER = {"start_to_close_seconds": 60, "heartbeat_seconds": 2}
"""A lost worker shows within two seconds of its last heartbeat."""


def email_section(port: int, ca_file: Path, **changes: object) -> dict[str, object]:
    """The ``[email]`` section of both workers: SMTP on ``port``; ``changes`` override."""
    section: dict[str, object] = {
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
    section.update(changes)
    return section


def host_config(tmp_path: Path, task_queue: str, host_queue: str, email: dict[str, object]) -> Path:
    """The configuration of a worker process serving only ``send_email`` on ``host_queue``."""
    section = "\n".join(
        f"{key} = {value}" if isinstance(value, int) else f'{key} = "{value}"'
        for key, value in email.items()
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


async def lose_host_during_send(
    host: Spawned, sink: Sink, handle: WorkflowHandle[Any, Any]
) -> None:
    """SIGKILL the host worker while the SMTP server holds the message, unanswered.

    The tool heartbeats the message's id before it sends; the SDK delivers heartbeats on its own
    schedule, which a busy machine can put after the kill, so the kill waits for the server to
    hold it."""
    await asyncio.to_thread(sink.data_started.wait, 30)
    await heartbeat_recorded(handle)
    os.kill(host.pid, signal.SIGKILL)
    host.kill()
