"""A worker lost during a creation on Google Calendar or Outlook: the call is ``uncertain``, names
the identity to look for, and the event exists once, even when the same call is made again.

The tool runs in a real worker process (``tests.support.calendar_host``) on a queue of its own;
its requests reach a loopback server that keeps events and answers in the service's documented
format (``tests.support.calendar_services``). That server stores the event, never answers the
creation, and the worker is then SIGKILLed. The same call again reaches the service's own answer
to a repeat: Google's 409 for an event id it holds, Graph's event for a ``transactionId`` it holds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.calendar_host import forwarded_tools
from tests.support.calendar_services import (
    GOOGLE_EVENTS,
    GRAPH_EVENTS,
    CalendarService,
    calendar_service,
)
from tests.support.calendars import TOKEN, TOKEN_ENV
from tests.support.harness import heartbeat_recorded, make_config, running_worker, start_call
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from tests.worker.support import Spawned, hermetic_env
from toolcalls.activities.calendar import CalendarTools
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.calendar.tokens import creation_id
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallRequest

LOST_AFTER = {"start_to_close_seconds": 40, "heartbeat_seconds": 2}
LUNCH = {
    "title": "Lunch with Bob",
    "start": "2026-01-07T12:00:00+01:00",
    "end": "2026-01-07T13:00:00+01:00",
}
PROJECT = Path(__file__).resolve().parents[3]
BACKENDS = {"google": "google", "graph": "outlook"}
"""The service each test runs, and the calendar backend that reaches it."""


def host_config(tmp_path: Path, task_queue: str, host_queue: str, backend: str) -> Path:
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
            backend = "{backend}"
            token_env = "{TOKEN_ENV}"

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


async def lose_a_creation(
    client: Client, task_queue: str, tmp_path: Path, service: CalendarService, backend: str
) -> tuple[str, Any]:
    """One call whose worker is SIGKILLed once the service has stored its event, unanswered."""
    host_queue = f"{task_queue}-calendar"
    shared = {
        # One state directory: both workers vouch with the key kept there.
        "state_dir": str(tmp_path / "state"),
        "tools": [*ALL_TOOL_NAMES, "create_calendar_event"],
        "calendar": {"backend": backend, "token_env": TOKEN_ENV},
        "activities": {
            "task_queues": {"create_calendar_event": host_queue},
            "timeouts": {"create_calendar_event": LOST_AFTER},
        },
        "ceiling": {"default_effect": "allow"},
    }
    host = Spawned(
        [
            sys.executable,
            *("-m", "tests.support.calendar_host"),
            str(host_config(tmp_path, task_queue, host_queue, backend)),
            client.service_client.config.target_host,
            service.origin,
        ],
        hermetic_env(tmp_path, **{TOKEN_ENV: TOKEN}),
        cwd=PROJECT,
    )
    try:
        await asyncio.to_thread(host.wait_for_line, "polling task queue", 60)
        async with running_worker(client, make_config(task_queue, **shared)):
            handle = await start_call(client, task_queue, "create_calendar_event", LUNCH)
            created = await asyncio.to_thread(service.created.wait, 30)
            assert created, "the service was never asked to create the event"
            # The tool heartbeats its identity before it sends; the SDK delivers heartbeats on
            # its own schedule, which a busy machine (parallel test workers) can put after the
            # request. The worker is lost once the server holds that heartbeat.
            await heartbeat_recorded(handle)
            os.killpg(host.pid, signal.SIGKILL)  # created, and the worker never heard
            host.kill()
            result = await asyncio.wait_for(handle.result(), 30)
    finally:
        host.kill()
    return handle.id, result


async def call_again(
    client: Client, task_queue: str, tmp_path: Path, workflow_id: str, service: CalendarService
) -> Any:
    """The same call (the workflow id reused once the first run closed: the same idempotency
    key), on a worker in this process whose tools reach the same service."""
    backend = BACKENDS[service.kind]
    config = make_config(
        task_queue,
        state_dir=str(tmp_path / "state"),
        tools=[*ALL_TOOL_NAMES, "create_calendar_event"],
        calendar={"backend": backend, "token_env": TOKEN_ENV},
        activities={"timeouts": {"create_calendar_event": LOST_AFTER}},
        ceiling={"default_effect": "allow"},
    )
    settings = CalendarSettings(backend=backend, token_env=TOKEN_ENV)
    tools = forwarded_tools(settings, service.origin, environ={TOKEN_ENV: TOKEN})
    instances = {ProbeTools: ProbeTools(), CalendarTools: tools}
    async with build_worker(client, config, families=ALL_FAMILIES, instances=instances):
        again = await client.start_workflow(
            ToolCallWorkflow.run,
            ToolCallRequest(tool="create_calendar_event", arguments=LUNCH),
            id=workflow_id,
            task_queue=task_queue,
        )
        return await asyncio.wait_for(again.result(), 30)


def assert_lost(result: Any, identity: str) -> None:
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert "heartbeat timeout" in result.error.message
    # What to look for: the identity the tool reported before it sent anything.
    assert result.output is not None
    assert result.output["creation_id"] == identity


@pytest.mark.parametrize("kind", ["google", "graph"])
async def test_a_worker_lost_during_a_creation_is_uncertain_and_the_event_exists_once(
    client: Client, task_queue: str, tmp_path: Path, kind: str
) -> None:
    with calendar_service(kind, hold_creations=True) as service:
        workflow_id, result = await lose_a_creation(
            client, task_queue, tmp_path, service, BACKENDS[kind]
        )
        identity = creation_id(f"{workflow_id}:{workflow_id}")
        assert_lost(result, identity)
        [first] = service.requests
        assert first.headers["authorization"] == f"Bearer {TOKEN}"
        [event] = service.events
        if kind == "google":
            assert (first.method, first.path) == ("POST", GOOGLE_EVENTS)
            assert event["id"] == identity
        else:
            assert (first.method, first.path) == ("POST", GRAPH_EVENTS)
            assert event["transactionId"] == identity

        service.advance(minutes=1)  # the same call again, a minute later by the service's clock
        repeated = await call_again(client, task_queue, tmp_path, workflow_id, service)
        assert repeated.status is CallStatus.COMPLETED, repeated.error
        assert repeated.output is not None
        assert repeated.output["creation_id"] == identity
        assert len(service.events) == 1  # the service holds the one event the lost attempt made
        output = repeated.output
        if kind == "google":
            # Google refused the id (409); the tool read the event under it and returned it.
            assert [(r.method, r.path) for r in service.requests[1:]] == [
                ("POST", GOOGLE_EVENTS),
                ("GET", f"{GOOGLE_EVENTS}/{identity}"),
            ]
            assert (output["id"], output["already_created"]) == (identity, True)
        else:
            # Graph answered the repeated transactionId with the event it already held.
            assert [(r.method, r.path) for r in service.requests[1:]] == [("POST", GRAPH_EVENTS)]
            assert service.requests[1].body["transactionId"] == identity
            assert (output["id"], output["already_created"]) == (event["id"], True)
            assert output["event"]["transactionId"] == identity
        assert output["event"]["subject" if kind == "graph" else "summary"] == LUNCH["title"]
