"""Building and running one worker process from a ``Config``."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Iterable, Sequence
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
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.catalog import BUILTIN_TOOLS, ToolSpec
from activities.runtime import ToolRuntime
from worker.config import Config, build_catalog
from worker.families import FamilyError, build_families
from workflows.models import SEARCH_ATTRIBUTES
from workflows.tool_call import ToolCallWorkflow

log = logging.getLogger("toolcalls.worker")

PASSTHROUGH_MODULES = ("workflows.models", "workflows.policy", "pydantic", "pydantic_core")
"""Pure modules the sandbox shares between workflow runs instead of re-importing them for each."""


class StartupError(RuntimeError):
    """The worker cannot start; the message says why and what to do."""


def sandbox_runner(*, isolate: bool = True) -> SandboxedWorkflowRunner:
    """The sandbox for ``ToolCallWorkflow``; ``isolate=False`` shares the ``workflows`` package.

    Isolated, the sandbox re-imports ``workflows.tool_call`` for every new workflow and proxies
    what it imports, so a non-deterministic call slipped into the workflow code fails at once.
    That costs more worker CPU per call than the rest of the call together (docs/performance.md),
    so production workers share the package, whose determinism the replay suite and the isolated
    test workers guard.
    """
    modules = PASSTHROUGH_MODULES if isolate else (*PASSTHROUGH_MODULES, "workflows")
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*modules)
    )


def build_worker(
    client: Client,
    config: Config,
    *,
    specs: Iterable[ToolSpec] = BUILTIN_TOOLS,
    families: dict[type, object] | None = None,
) -> Worker:
    """A worker for ``config``: the workflow and ``plan`` if it serves workflows, plus its tools."""
    catalog = build_catalog(config, specs)
    tools = config.served_tools(catalog)
    try:
        built = build_families(config, catalog, tools)
    except FamilyError as exc:
        raise StartupError(str(exc)) from exc
    runtime = ToolRuntime(catalog, config.ceiling_policy(), families={**built, **(families or {})})
    activities = runtime.tool_activities(tools)
    workflows: Sequence[type] = ()
    if config.serves_workflows:
        workflows = [ToolCallWorkflow]
    if config.serves_workflows or (tools and config.queue == config.task_queue):
        # ``plan`` runs locally for the workflow, and remotely for parent workflows that plan a
        # call before starting it (per-capability budgets): every activity poller on the
        # deployment's queue must have it.
        local = [name for name in runtime.pure_tools() if name in tools]
        activities += runtime.workflow_activities(local if config.serves_workflows else ())
    if not activities and not workflows:
        raise StartupError(f"nothing to serve on task queue {config.queue!r}")
    return Worker(
        client,
        task_queue=config.queue,
        workflows=workflows,
        activities=activities,
        workflow_runner=sandbox_runner(isolate=config.worker.isolate_workflows),
        graceful_shutdown_timeout=timedelta(seconds=config.worker.graceful_shutdown_seconds),
        max_concurrent_activities=config.worker.max_concurrent_activities,
        max_cached_workflows=config.worker.max_cached_workflows,
        # A worker serving none of the tools assigned to its queue must not poll activity tasks,
        # or it would take their tasks from the workers that serve them and fail them.
        no_remote_activities=bool(config.queue_tools(catalog)) and not tools,
    )


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


async def serve(client: Client, config: Config, stop: asyncio.Event) -> None:
    """Run the worker until ``stop`` is set, then shut down gracefully."""
    if config.serves_workflows:
        added = await ensure_search_attributes(client)
        if added:
            log.info("registered search attributes %s", ", ".join(added))
    worker = build_worker(client, config)
    catalog = build_catalog(config)
    log.info(
        "connected to %s namespace %s; polling task queue %r: workflows=%s tools=%s",
        client.service_client.config.target_host,
        client.namespace,
        config.queue,
        "yes" if config.serves_workflows else "no",
        ", ".join(config.served_tools(catalog)) or "none",
    )
    async with worker:
        await stop.wait()
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
