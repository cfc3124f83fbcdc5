"""A worker killed during a creation: the call is ``uncertain``, names the identity to look for,
reconciling finds the event by it, and the event exists at most once, even when the same call is
made again.

The tool runs in a real worker process (``python -m toolcalls.worker``) on a queue of its own,
talking to Radicale through a loopback proxy that passes the ``PUT`` on and holds back the server's
answer: the event is created, the worker never hears so, and is then SIGKILLed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from temporalio.client import Client

from tests.activities.calendar.conftest import Radicale
from tests.support.calendars import PASSWORD_ENV, USER
from tests.support.harness import heartbeat_recorded, make_config, running_worker, start_call
from tests.support.tools import ALL_TOOL_NAMES
from tests.worker.support import Spawned, hermetic_env
from toolcalls.activities.calendar.tokens import creation_id
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallRequest
from toolcalls.workflows.models.reconcile import Settled
from toolcalls.workflows.reach.client import ToolCallClient

LOST_AFTER = {"start_to_close_seconds": 40, "heartbeat_seconds": 2}
LUNCH = {
    "title": "Lunch with Bob",
    "start": "2026-01-07T12:00:00+01:00",
    "end": "2026-01-07T13:00:00+01:00",
}


class HoldingProxy:
    """Forwards loopback connections to the server; the answer to a ``PUT`` is held back."""

    def __init__(self, target: httpx.URL) -> None:
        self.target = target
        self.put_answered = asyncio.Event()
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, hold: bool
    ) -> None:
        while data := await reader.read(65_536):
            if hold:
                self.put_answered.set()  # Radicale has stored it and answered: swallow that
                continue
            writer.write(data)
            await writer.drain()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(self.target.host, self.target.port)
        first = await client_r.read(65_536)
        server_w.write(first)
        await server_w.drain()
        hold = first.startswith(b"PUT ")
        with contextlib.suppress(ConnectionError):
            await asyncio.gather(
                self._pipe(client_r, server_w, hold=False),
                self._pipe(server_r, client_w, hold=hold),
            )
        for writer in (client_w, server_w):
            writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        finally:
            self._tasks.discard(task)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[HoldingProxy]:
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()


def host_config(tmp_path: Path, task_queue: str, host_queue: str, url: str) -> Path:
    path = tmp_path / "calendar-host.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            task_queue = "{task_queue}"
            tools = ["create_calendar_event"]
            state_dir = "{tmp_path / "state"}"

            [worker]
            queue = "{host_queue}"
            serve_workflows = false

            [calendar]
            backend = "caldav"
            url = "{url}"
            username = "{USER}"
            password_env = "{PASSWORD_ENV}"

            [activities.task_queues]
            create_calendar_event = "{host_queue}"

            [activities.timeouts.create_calendar_event]
            start_to_close_seconds = {LOST_AFTER["start_to_close_seconds"]}
            heartbeat_seconds = {LOST_AFTER["heartbeat_seconds"]}

            [ceiling]
            default_effect = "allow"
            """
        ),
        encoding="utf-8",
    )
    return path


async def test_a_worker_lost_during_a_creation_is_uncertain_and_the_event_exists_once(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    radicale: Radicale,
    collection: str,
    password: str,
) -> None:
    host_queue = f"{task_queue}-calendar"
    path = httpx.URL(collection).path
    proxy = HoldingProxy(httpx.URL(radicale.origin))
    async with proxy.running():
        proxied = f"http://127.0.0.1:{proxy.port}{path}"
        calendar = {
            "backend": "caldav",
            "url": proxied,
            "username": USER,
            "password_env": PASSWORD_ENV,
        }
        shared = {
            "tools": [*ALL_TOOL_NAMES, "create_calendar_event"],
            "state_dir": str(tmp_path / "state"),  # the host worker's: the same attestation key
            "calendar": calendar,
            "activities": {
                "task_queues": {"create_calendar_event": host_queue},
                "timeouts": {"create_calendar_event": LOST_AFTER},
            },
            "ceiling": {"default_effect": "allow"},
        }
        host = Spawned(
            [
                sys.executable,
                *("-m", "toolcalls.worker", "--config"),
                str(host_config(tmp_path, task_queue, host_queue, proxied)),
                *("--address", client.service_client.config.target_host),
            ],
            hermetic_env(tmp_path, **{PASSWORD_ENV: password}),
            cwd=tmp_path,
        )
        try:
            await asyncio.to_thread(host.wait_for_line, "polling task queue", 60)
            async with running_worker(client, make_config(task_queue, **shared)):
                handle = await start_call(client, task_queue, "create_calendar_event", LUNCH)
                await asyncio.wait_for(proxy.put_answered.wait(), 30)
                # The identity's heartbeat, sent by the SDK on its own schedule, is recorded.
                await heartbeat_recorded(handle)
                os.killpg(host.pid, signal.SIGKILL)  # created, and the worker never heard
                host.kill()
                result = await asyncio.wait_for(handle.result(), 30)
        finally:
            host.kill()

    identity = creation_id(f"{handle.id}:{handle.id}")
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert "heartbeat timeout" in result.error.message
    # What to look for: the identity the tool reported before it sent anything.
    assert result.output is not None
    assert result.output["creation_id"] == identity
    assert radicale.resources(collection) == [f"{identity}.ics"]

    # Reconciling looks the identity up, on the tool's queue, and records that the event exists.
    direct = {**shared, "calendar": {**calendar, "url": collection}}
    tool_host = {"queue": host_queue, "serve_workflows": False}
    async with (
        running_worker(client, make_config(task_queue, **direct)),
        running_worker(client, make_config(task_queue, **direct, worker=tool_host)),
    ):
        settled = await ToolCallClient(client, task_queue=task_queue).reconcile(handle.id)
    assert settled.outcome is Settled.FOUND
    assert settled.checked == (
        f"looked up creation id {identity} (CalDAV resource name and UID) on {collection} (caldav)"
    )
    assert settled.evidence is not None
    assert settled.evidence["href"] == f"{path}{identity}.ics"
    assert settled.evidence["uid"] == identity
    assert radicale.resources(collection) == [f"{identity}.ics"]

    # The same call again (the workflow id reused once the first run closed, so the same
    # idempotency key): it finds the event the lost attempt made and creates nothing.
    direct["activities"] = {"timeouts": {"create_calendar_event": LOST_AFTER}}
    async with running_worker(client, make_config(task_queue, **direct)):
        again = await client.start_workflow(
            ToolCallWorkflow.run,
            ToolCallRequest(tool="create_calendar_event", arguments=LUNCH),
            id=handle.id,
            task_queue=task_queue,
        )
        repeated = await asyncio.wait_for(again.result(), 30)
    assert repeated.status is CallStatus.COMPLETED
    assert repeated.output is not None
    assert repeated.output["creation_id"] == identity
    assert repeated.output["already_created"] is True
    assert radicale.resources(collection) == [f"{identity}.ics"]
