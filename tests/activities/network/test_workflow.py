"""``fetch_url`` through a real ``ToolCallWorkflow`` on a real server.

The page comes from a loopback server, which only a worker whose ``FetchTools`` admits loopback
can reach; the worker the configuration builds on its own (the production guard) refuses it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client

from tests.support.harness import decision, make_config, pending_approval, run_call, start_call
from tests.support.http_servers import MapResolver, closed_port, serve, text
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from toolcalls.activities.network import NETWORK
from toolcalls.activities.network.fetch import FetchTools
from toolcalls.activities.network.guard import NetworkGuard, any_address
from toolcalls.activities.network.settings import FetchSettings
from toolcalls.worker.config import Config
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, CapabilityPolicy, Effect, ErrorCode

PAGE = "<html><head><title>Hello</title></head><body><p>Fetched through Temporal.</p></body></html>"


def fetch_config(task_queue: str, **sections: Any) -> Config:
    return make_config(task_queue, tools=[*ALL_TOOL_NAMES, "fetch_url"], **sections)


@asynccontextmanager
async def loopback_worker(
    client: Client, config: Config, resolver: MapResolver | None = None
) -> AsyncIterator[None]:
    guard = NetworkGuard(
        resolver=resolver or MapResolver({"site.test": ["127.0.0.1"]}),
        admit=any_address,
        allowed_ports=None,
    )
    families = {
        ProbeTools: ProbeTools(),
        FetchTools: FetchTools(config.family_settings(NETWORK).fetch, guard=guard),
    }
    async with build_worker(client, config, families=ALL_FAMILIES, instances=families):
        yield


def expected(url: str) -> dict[str, object]:
    return {
        "url": url,
        "status_code": 200,
        "content_type": "text/html",
        "title": "Hello",
        "text": "Fetched through Temporal.",
        "truncated": False,
        "untrusted_content": True,
    }


async def test_allowed_by_the_default_ceiling(client: Client, task_queue: str) -> None:
    with serve({"/": text(PAGE, "text/html")}) as server:
        url = server.url("/", host="site.test")
        async with loopback_worker(client, fetch_config(task_queue)):
            result = await run_call(client, task_queue, "fetch_url", {"url": url})
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output == expected(url)
    assert result.capabilities == ["network.read"]
    assert result.approval is None


async def test_runs_once_approved_under_a_request_policy(client: Client, task_queue: str) -> None:
    policy = CapabilityPolicy(rules={"network.read": Effect.REQUIRE_APPROVAL})
    with serve({"/": text(PAGE, "text/html")}) as server:
        url = server.url("/", host="site.test")
        async with loopback_worker(client, fetch_config(task_queue)):
            handle = await start_call(
                client, task_queue, "fetch_url", {"url": url, "max_chars": None}, policy=policy
            )
            pending = await pending_approval(handle)
            assert (pending.tool, pending.capabilities) == ("fetch_url", ["network.read"])
            assert pending.arguments == {"url": url, "max_chars": 12_000}
            assert server.requests == []  # nothing fetched before the approval
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="ann"))
            result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output == expected(url)
    assert result.approval is not None
    assert (result.approval.approved, result.approval.approver) == (True, "ann")
    assert len(server.requests) == 1


async def test_the_configured_worker_refuses_loopback_as_a_fixable_error(
    client: Client, task_queue: str
) -> None:
    config = fetch_config(task_queue)
    async with build_worker(client, config, families=ALL_FAMILIES, instances={}):
        literal = await run_call(client, task_queue, "fetch_url", {"url": "http://127.0.0.1/"})
        port = await run_call(client, task_queue, "fetch_url", {"url": "http://example.com:6379/"})
    assert literal.status is CallStatus.FAILED
    assert literal.error is not None
    assert literal.error.code is ErrorCode.INVALID_ARGUMENTS
    assert literal.error.fixable_args == ["url"]
    assert literal.error.message == "fetch_url: url: 127.0.0.1 is a loopback address"
    assert port.error is not None
    assert port.error.code is ErrorCode.INVALID_ARGUMENTS
    assert "port 6379 is not allowed" in port.error.message


async def test_a_url_with_credentials_is_refused_before_the_call_runs(
    client: Client, task_queue: str
) -> None:
    async with loopback_worker(client, fetch_config(task_queue)):
        result = await run_call(
            client, task_queue, "fetch_url", {"url": "http://user:pw@site.test/"}
        )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == ["url"]
    assert "credentials" in result.error.message


async def test_an_outage_is_retried_when_reads_may_retry(client: Client, task_queue: str) -> None:
    # The first attempt's lookup answers 127.0.0.2, where the port refuses; the second answers
    # the server's 127.0.0.1. Temporal makes the second attempt because the outage is retryable.
    with serve({"/": text(PAGE, "text/html")}) as server, closed_port("127.0.0.2", server.port):
        resolver = MapResolver({"site.test": [["127.0.0.2"], ["127.0.0.1"]]})
        url = server.url("/", host="site.test")
        config = fetch_config(task_queue, activities={"read_attempts": 2})
        async with loopback_worker(client, config, resolver):
            result = await run_call(client, task_queue, "fetch_url", {"url": url})
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output == expected(url)
    assert resolver.calls == ["site.test", "site.test"]
    assert len(server.requests) == 1


async def test_an_outage_fails_the_call_as_retryable_with_nothing_to_fix(
    client: Client, task_queue: str
) -> None:
    with closed_port() as port:
        async with loopback_worker(client, fetch_config(task_queue)):
            result = await run_call(
                client, task_queue, "fetch_url", {"url": f"http://site.test:{port}/"}
            )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.NETWORK_UNAVAILABLE
    assert result.error.retryable
    assert result.error.fixable_args == []
    assert f"could not reach site.test:{port} (connection refused)" in result.error.message


def test_fetch_url_needs_no_configuration() -> None:
    config = fetch_config("q")
    assert config.family_settings(NETWORK).fetch == FetchSettings()
    assert FetchSettings(user_agent="example-bot/1 (+https://example.com/bot)").user_agent
