"""The worker for OpenAI Agents SDK agents' workflows, with Temporal's ``OpenAIAgentsPlugin``."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from agents import Model, ModelProvider
from temporalio.client import Client
from temporalio.converter import DefaultPayloadConverter
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import TestModelProvider

from toolcalls.agents._worker import AgentWorker, serve_agents

MODEL_TIMEOUT = timedelta(minutes=1)
"""How long one model turn (the plugin's model activity) may take unless ``model_params`` say."""


@asynccontextmanager
async def agent_worker(
    client: Client,
    *,
    task_queue: str,
    workflows: Sequence[type],
    model: Model | None = None,
    model_provider: ModelProvider | None = None,
    model_params: ModelActivityParameters | None = None,
    **options: Any,
) -> AsyncIterator[AgentWorker]:
    """A worker for the agents' workflows on ``task_queue``, with ``OpenAIAgentsPlugin`` on a
    client of ``client``'s connection, until the block ends.

    The models: ``model`` for every agent (``testing.ScriptedModel`` offline), or a
    ``model_provider``, or neither: OpenAI's, with ``OPENAI_API_KEY`` from this process's
    environment. ``model_params`` are the model activity's options (a minute per turn by
    default). The agent's client has ``client``'s converter (``toolcalls.data_converter()``: the
    deployment's codec and payload store) with the plugin's payload converter; ``client`` itself
    is left as it is, for a ``ToolCallClient`` (which the plugin's converter refuses).
    ``options`` are ``Worker``'s.

    Raises:
        TypeError: both ``model`` and ``model_provider``.
    """
    if model is not None and model_provider is not None:
        raise TypeError("agent_worker: give either model or model_provider, not both")
    plugin = OpenAIAgentsPlugin(
        model_params=model_params or ModelActivityParameters(start_to_close_timeout=MODEL_TIMEOUT),
        model_provider=TestModelProvider(model) if model is not None else model_provider,
    )
    # The plugin puts its payload converter in place of the default one, and refuses another.
    converter = dataclasses.replace(
        client.data_converter, payload_converter_class=DefaultPayloadConverter
    )
    async with serve_agents(
        client,
        task_queue=task_queue,
        workflows=workflows,
        plugins=[plugin],
        data_converter=converter,
        **options,
    ) as worker:
        yield worker
