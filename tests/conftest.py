"""One real Temporal dev server for the session; a fresh task queue per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from toolcalls.worker.devserver import temporal_binary
from toolcalls.workflows.models.call import SEARCH_ATTRIBUTES

LISTING_NAMESPACE = "listing"
"""A second namespace on the session's server, with our search attributes, for tests that page
through every waiting call: only their own calls are there, not those other tests left waiting."""


@pytest.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
        dev_server_extra_args=["--namespace", LISTING_NAMESPACE],
    )
    yield environment
    await environment.shutdown()


@pytest.fixture
def client(env: WorkflowEnvironment) -> Client:
    return env.client


@pytest.fixture
async def listing_client(env: WorkflowEnvironment) -> Client:
    """A client of ``LISTING_NAMESPACE``; a test that uses it ends the calls it started."""
    config = env.client.config()
    config["namespace"] = LISTING_NAMESPACE
    return Client(**config)


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4()}"
