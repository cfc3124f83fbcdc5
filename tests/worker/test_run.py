"""Registering search attributes and building workers, checked with real servers and calls."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, IndexedValueType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.worker.support import free_port
from toolcalls.worker.config import Config, parse_config
from toolcalls.worker.devserver import temporal_binary
from toolcalls.worker.exits import StartupError
from toolcalls.worker.run import build_worker, ensure_search_attributes, serve
from toolcalls.workflows.call.definitions import DefinitionsWorkflow
from toolcalls.workflows.call.grants import GrantWorkflow
from toolcalls.workflows.call.ledger import QuotaLedgerWorkflow
from toolcalls.workflows.call.marker import EncryptsMarkerWorkflow
from toolcalls.workflows.call.reconcile import ToolCallReconcileWorkflow
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    PLAN_ACTIVITY,
    SEARCH_ATTRIBUTES,
    CallStatus,
    ErrorCode,
    ToolCallRequest,
    ToolCallResult,
)

OTHER_NAMESPACE = "other"
FAST = {"schedule_to_start_seconds": 1}
"""A tool nobody serves ends the call after a second instead of a minute."""


@pytest.fixture(scope="module")
async def plain_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server started without our search attributes."""
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        port=free_port(),
        dev_server_log_level="error",
        dev_server_extra_args=["--namespace", OTHER_NAMESPACE],
    )
    yield environment
    await environment.shutdown()


async def custom_attributes(client: Client) -> dict[str, int]:
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    return dict(listed.custom_attributes)


async def test_registers_the_attributes_once(plain_env: WorkflowEnvironment) -> None:
    client = plain_env.client
    names = {key.name for key in SEARCH_ATTRIBUTES}
    assert names == {
        "ToolCallStatus",
        "ToolName",
        "ToolCapabilities",
        "ToolCallGrantScope",
        "ToolCallsWaiting",
    }
    assert not names & set(await custom_attributes(client))

    added = await ensure_search_attributes(client)
    assert sorted(added) == sorted(names)
    registered = await custom_attributes(client)
    assert registered["ToolCallStatus"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    assert registered["ToolName"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    assert registered["ToolCapabilities"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST
    assert registered["ToolCallGrantScope"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    assert registered["ToolCallsWaiting"] == IndexedValueType.INDEXED_VALUE_TYPE_INT

    assert await ensure_search_attributes(client) == []
    assert await custom_attributes(client) == registered


async def test_an_attribute_with_another_type_stops_startup(
    plain_env: WorkflowEnvironment,
) -> None:
    client = await Client.connect(
        plain_env.client.service_client.config.target_host, namespace=OTHER_NAMESPACE
    )
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=OTHER_NAMESPACE,
            search_attributes={"ToolName": IndexedValueType.INDEXED_VALUE_TYPE_TEXT},
        )
    )
    with pytest.raises(StartupError) as info:
        await ensure_search_attributes(client)
    assert str(info.value) == (
        "search attribute ToolName exists with type INDEXED_VALUE_TYPE_TEXT, "
        "not INDEXED_VALUE_TYPE_KEYWORD"
    )


def config_for(task_queue: str, **sections: Any) -> Config:
    data: dict[str, Any] = {
        "task_queue": task_queue,
        "tools": ["calculator", "current_datetime"],
        "activities": dict(FAST),
    }
    data.update(sections)
    return parse_config(data, "test config")


async def call(
    client: Client, queue: str, tool: str, arguments: dict[str, Any], **request: Any
) -> tuple[ToolCallResult, list[HistoryEvent]]:
    handle = await client.start_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(tool=tool, arguments=arguments, **request),
        id=f"call-{uuid.uuid4()}",
        task_queue=queue,
    )
    result = await asyncio.wait_for(handle.result(), 30)
    return result, [event async for event in handle.fetch_history_events()]


def scheduled(events: list[HistoryEvent]) -> list[tuple[str, str]]:
    """(activity type, task queue) of every regular activity the workflow scheduled."""
    return [
        (
            e.activity_task_scheduled_event_attributes.activity_type.name,
            e.activity_task_scheduled_event_attributes.task_queue.name,
        )
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def local_activities(events: list[HistoryEvent]) -> list[str]:
    """Activity types of the local activities recorded (as markers) in the history."""
    found = []
    for event in events:
        marker = event.marker_recorded_event_attributes
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED and "data" in marker.details:
            data = json.loads(marker.details["data"].payloads[0].data)
            found.append(data["activity_type"])
    return found


async def test_combined_worker_runs_pure_tools_locally(client: Client, task_queue: str) -> None:
    config = config_for(task_queue)
    stop = asyncio.Event()
    serving = asyncio.create_task(serve(client, config, stop))
    try:
        result, events = await call(client, task_queue, "calculator", {"expression": "6 * 7"})
    finally:
        stop.set()
        await asyncio.wait_for(serving, 30)
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "6 * 7", "result": 42}
    assert scheduled(events) == []
    # The plan ran the calculator itself: one local activity for the whole call.
    assert local_activities(events) == [PLAN_ACTIVITY]


async def test_workflow_only_and_tools_only_workers_share_a_queue(
    client: Client, task_queue: str
) -> None:
    workflows_only = build_worker(client, config_for(task_queue, worker={"serve_tools": False}))
    tools_only = build_worker(client, config_for(task_queue, worker={"serve_workflows": False}))
    async with workflows_only:
        alone, _ = await call(client, task_queue, "calculator", {"expression": "1 + 1"})
        async with tools_only:
            result, events = await call(client, task_queue, "calculator", {"expression": "2 + 3"})
    # Alone, the workflow worker leaves the tool's task for a tool worker instead of taking it.
    assert alone.error is not None
    assert alone.error.code is ErrorCode.TOOL_UNAVAILABLE
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "2 + 3", "result": 5}
    # The workflow worker does not serve calculator, so it may not run it as a local activity.
    assert scheduled(events) == [("calculator", task_queue)]
    assert local_activities(events) == [PLAN_ACTIVITY]


async def test_tools_only_worker_on_its_own_queue(client: Client, task_queue: str) -> None:
    host_b = f"{task_queue}-b"
    sections = {"activities": {**FAST, "task_queues": {"current_datetime": host_b}}}
    main = config_for(task_queue, **sections)
    on_b = config_for(task_queue, worker={"queue": host_b}, **sections)
    assert not on_b.serves_workflows

    async with build_worker(client, main):
        nobody_on_b, _ = await call(client, task_queue, "current_datetime", {})
        async with build_worker(client, on_b):
            result, events = await call(client, task_queue, "current_datetime", {})
            routed, _ = await call(
                client, task_queue, "calculator", {"expression": "1"}, task_queue=host_b
            )
    assert nobody_on_b.error is not None
    assert nobody_on_b.error.code is ErrorCode.TOOL_UNAVAILABLE
    assert host_b in nobody_on_b.error.message
    assert result.status is CallStatus.COMPLETED
    assert isinstance(result.output, dict)
    assert result.output["timezone"] == "UTC"
    assert scheduled(events) == [("current_datetime", host_b)]
    # Host B serves only the tools assigned to it.
    assert routed.status is CallStatus.FAILED
    assert routed.error is not None
    assert routed.error.code is ErrorCode.EXECUTION_FAILED
    assert "not registered" in routed.error.message


async def test_tools_only_worker_does_not_run_workflows(client: Client, task_queue: str) -> None:
    host_b = f"{task_queue}-b"
    on_b = config_for(
        task_queue,
        worker={"queue": host_b},
        activities={**FAST, "task_queues": {"current_datetime": host_b}},
    )
    async with build_worker(client, on_b):
        handle = await client.start_workflow(
            ToolCallWorkflow.run,
            ToolCallRequest(tool="current_datetime"),
            id=f"call-{uuid.uuid4()}",
            task_queue=host_b,
        )
        await asyncio.sleep(1.5)
        events = [event async for event in handle.fetch_history_events()]
        await handle.terminate()
    kinds = [e.event_type for e in events]
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED in kinds
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED not in kinds


@pytest.mark.parametrize(
    "sections",
    [
        {"worker": {"queue": "elsewhere"}},
        {"worker": {"serve_tools": False, "serve_workflows": False}},
    ],
)
async def test_a_worker_with_nothing_to_serve_refuses_to_start(
    client: Client, task_queue: str, sections: dict[str, Any]
) -> None:
    config = config_for(task_queue, **sections)
    with pytest.raises(StartupError, match="nothing to serve on task queue"):
        build_worker(client, config)


async def test_a_resource_that_cannot_be_opened_stops_startup_naming_its_setting(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    blocked = tmp_path / "state"
    blocked.write_text("a file where the state directory should be")
    root = tmp_path / "root"
    root.mkdir()
    config = config_for(
        task_queue,
        tools=["execute_command"],
        state_dir=str(blocked),
        process={"roots": [str(root)]},
    )
    with pytest.raises(StartupError, match=r"^state_dir: \[Errno 20\] Not a directory: .*groups"):
        build_worker(client, config)


async def test_worker_options_come_from_the_config(client: Client, task_queue: str) -> None:
    config = config_for(
        task_queue,
        worker={
            "max_cached_workflows": 0,
            "graceful_shutdown_seconds": 3,
            "max_concurrent_activities": 9,
        },
    )
    options = build_worker(client, config).config(active_config=True)
    assert options["task_queue"] == task_queue
    assert options.get("max_cached_workflows") == 0
    # Without a cache, one workflow task at a time (plugin.UNCACHED_WORKFLOW_TASKS).
    assert options.get("max_concurrent_workflow_tasks") == 1
    assert options.get("max_concurrent_activities") == 9
    assert options.get("graceful_shutdown_timeout") == timedelta(seconds=3)
    assert list(options.get("workflows") or []) == [
        ToolCallWorkflow,
        GrantWorkflow,
        DefinitionsWorkflow,
        ToolCallReconcileWorkflow,
        EncryptsMarkerWorkflow,
        QuotaLedgerWorkflow,
    ]
    other = f"{task_queue}-cached"
    cached = build_worker(client, config_for(other)).config(active_config=True)
    assert cached.get("max_cached_workflows") == 1000
    assert cached.get("max_concurrent_workflow_tasks") is None
