"""The worker for an agent's workflows, with its framework's plugins: what each adapter's
``agent_worker`` builds.

    async with agent_worker(client, task_queue="assistant", workflows=[Assistant]) as agents:
        print(await agents.execute(Assistant.run, "What is 6 * 7?"))

A framework's Temporal integration is a plugin for the client and the worker (its payload
converter, its activities, its sandbox passthrough). ``agent_worker`` makes a client on the given
client's connection with those plugins (the given client is left as it is: a ``ToolCallClient``
on it approves the agent's calls), and a worker on it for the agent's workflows, whose sandbox
shares the deployment's models with the workflows (``toolcalls.worker.plugin.sandbox_runner``).
The adapters' modules re-export it with their framework's plugin:
``toolcalls.agents.pydantic_ai.agent_worker``, ``toolcalls.agents.openai_agents.agent_worker``,
``toolcalls.agents.langgraph.agent_worker``.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker

__all__ = ["AgentWorker", "serve_agents"]

R = TypeVar("R")


@dataclasses.dataclass(frozen=True)
class AgentWorker:
    """A running worker for an agent's workflows, and the client to start them with."""

    client: Client
    """The given client's connection, with the framework's plugins."""
    task_queue: str
    """The agent's workflows' task queue (the worker's), not the deployment's."""

    async def start(
        self, run: Callable[..., Awaitable[R]], *args: Any, id: str | None = None, **options: Any
    ) -> WorkflowHandle[Any, R]:
        """Start ``run`` (a workflow's run method) with ``args`` on this worker's queue.

        ``id`` defaults to the queue's name and a random suffix; the agent's tool calls are
        ``"{id}/tools/{tool_call_id}"``. ``options`` are ``Client.start_workflow``'s.
        """
        return await self.client.start_workflow(
            run,
            args=list(args),
            id=id or f"{self.task_queue}-{uuid.uuid4().hex[:12]}",
            task_queue=self.task_queue,
            **options,
        )

    async def execute(
        self, run: Callable[..., Awaitable[R]], *args: Any, id: str | None = None, **options: Any
    ) -> R:
        """Start ``run`` as ``start`` does and wait for its result."""
        handle = await self.start(run, *args, id=id, **options)
        return await handle.result()


@asynccontextmanager
async def serve_agents(
    client: Client,
    *,
    task_queue: str,
    workflows: Sequence[type],
    plugins: Sequence[SimplePlugin | Any] = (),
    data_converter: DataConverter | None = None,
    **options: Any,
) -> AsyncIterator[AgentWorker]:
    """Run a worker for ``workflows`` on ``task_queue`` with ``plugins`` until the block ends.

    ``data_converter`` replaces the client's for the agent's client (a plugin may need one of
    its own shape); ``options`` are ``Worker``'s (``workflow_runner`` defaults to the sandbox
    that shares the deployment's models).

    Raises:
        ValueError: no task queue, or no workflow to run.
    """
    if not task_queue:
        raise ValueError("agent_worker: task_queue is empty; name the agent's own task queue")
    if not workflows:
        raise ValueError("agent_worker: no workflows; give the agent's workflow classes")
    # Imported here: the adapters' modules are imported by workflow modules, whose sandbox
    # refuses the worker's configuration code.
    from toolcalls.worker.plugin import sandbox_runner

    settings = client.config()
    settings["plugins"] = [*settings.get("plugins", ()), *plugins]
    if data_converter is not None:
        settings["data_converter"] = data_converter
    agents = Client(**settings)
    options.setdefault("workflow_runner", sandbox_runner())
    async with Worker(agents, task_queue=task_queue, workflows=list(workflows), **options):
        yield AgentWorker(agents, task_queue)
