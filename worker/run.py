"""Building and running one worker process from a ``Config``."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError
from temporalio.worker import Worker

from toolcalls.activities.families import BUILTIN_FAMILIES
from toolcalls.activities.family import AnyFamily, FamilyError
from toolcalls.worker.config import Config, build_catalog
from toolcalls.worker.exits import StartupError
from toolcalls.worker.plugin import UNCACHED_WORKFLOW_TASKS, ToolCallsPlugin
from toolcalls.worker.telemetry.counters import counters_at_zero
from toolcalls.worker.telemetry.endpoint import Health
from toolcalls.workflows.models.call import SEARCH_ATTRIBUTES

log = logging.getLogger("toolcalls.worker")

HEARTBEAT_THROTTLE = timedelta(seconds=0.5)
"""The longest a worker holds back a tool's heartbeat (the SDK's default is 0.8 x the heartbeat
timeout): a cancellation reaches a tool only in the answer to a heartbeat, so a command that beats
every ``toolcalls.activities.heartbeat.PROMPT_INTERVAL`` learns of it within a second. Tools that
beat less often send no more than before."""


def build_worker(
    client: Client,
    config: Config,
    *,
    families: Sequence[AnyFamily] = BUILTIN_FAMILIES,
    instances: Mapping[type, object] | None = None,
) -> Worker:
    """A worker for ``config`` through ``ToolCallsPlugin``: the workflow and ``plan`` if it serves
    workflows, plus its tools; ``instances`` are prebuilt tool objects (tests)."""
    # Without a cache, one workflow task at a time: the SDK cannot run several calls' plans then
    # (toolcalls.worker.plugin.UNCACHED_WORKFLOW_TASKS).
    uncached = config.worker.max_cached_workflows == 0
    plugin = ToolCallsPlugin(config, families=families, instances=instances)
    try:
        served = plugin.served(config.queue)
        if not served.workflows and not served.plan and not served.tools:
            raise StartupError(f"nothing to serve on task queue {config.queue!r}")
        return Worker(
            client,
            task_queue=config.queue,
            plugins=[plugin],
            graceful_shutdown_timeout=timedelta(seconds=config.worker.graceful_shutdown_seconds),
            max_concurrent_activities=config.worker.max_concurrent_activities,
            max_cached_workflows=config.worker.max_cached_workflows,
            max_concurrent_workflow_tasks=UNCACHED_WORKFLOW_TASKS if uncached else None,
            no_remote_activities=not served.remote_activities,
            max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        )
    except FamilyError as exc:
        raise StartupError(str(exc)) from exc


async def ensure_search_attributes(client: Client) -> list[str]:
    """Register the search attributes the workflow publishes; the names it added."""
    service = client.operator_service
    namespace = client.namespace
    try:
        existing = await service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as exc:
        log.warning("cannot list search attributes (%s); assuming they are registered", exc)
        return []
    known = {**existing.system_attributes, **existing.custom_attributes}
    missing = {}
    for key in SEARCH_ATTRIBUTES:
        wanted = IndexedValueType.ValueType(int(key.indexed_value_type))
        have = known.get(key.name)
        if have is None:
            missing[key.name] = wanted
        elif have != wanted:
            raise StartupError(
                f"search attribute {key.name} exists with type "
                f"{IndexedValueType.Name(have)}, not {IndexedValueType.Name(wanted)}"
            )
    if not missing:
        return []
    try:
        await service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
        )
    except RPCError as exc:
        commands = "; ".join(
            f"temporal operator search-attribute create --name {key.name} --type {_type_name(key)}"
            for key in SEARCH_ATTRIBUTES
            if key.name in missing
        )
        raise StartupError(
            f"search attributes {', '.join(missing)} are not registered in namespace "
            f"{namespace!r} and this worker may not add them ({exc.message}); "
            f"register them first: {commands}"
        ) from None
    return list(missing)


async def serve(
    client: Client, config: Config, stop: asyncio.Event, *, health: Health | None = None
) -> None:
    """Run the worker until ``stop`` is set, then shut down gracefully; ``health`` (``/readyz``)
    learns when it polls and when it stops."""
    if config.serves_workflows:
        added = await ensure_search_attributes(client)
        if added:
            log.info("registered search attributes %s", ", ".join(added))
    worker = build_worker(client, config)
    catalog = build_catalog(config)
    served = config.served_tools(catalog)
    counters_at_zero(
        client,
        config.queue,
        calls=catalog.names if config.serves_workflows else (),
        runs=[spec for spec in catalog if spec.name in served],
    )
    log.info(
        "connected to %s namespace %s; polling task queue %r: workflows=%s tools=%s",
        client.service_client.config.target_host,
        client.namespace,
        config.queue,
        "yes" if config.serves_workflows else "no",
        ", ".join(served) or "none",
    )
    if config.serves_workflows and config.worker.max_cached_workflows == 0:
        log.info(
            "max_cached_workflows = 0: every workflow task replays its history, one task at a time"
        )
    async with worker:
        if health is not None:
            health.polling(client, worker)
        await stop.wait()
        if health is not None:
            health.stopping()
        log.info(
            "shutting down: running activities get %gs to finish",
            config.worker.graceful_shutdown_seconds,
        )
    log.info("worker stopped")


def stop_on_signals(stop: asyncio.Event) -> None:
    """Set ``stop`` on SIGINT or SIGTERM."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


def _type_name(key: SearchAttributeKey[Any]) -> str:
    """The CLI's name of a search attribute type: ``Keyword``, ``KeywordList``."""
    name = IndexedValueType.Name(IndexedValueType.ValueType(int(key.indexed_value_type)))
    return name.removeprefix("INDEXED_VALUE_TYPE_").title().replace("_", "")
