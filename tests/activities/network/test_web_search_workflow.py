"""``web_search`` through a real ``ToolCallWorkflow`` on a real server.

The worker's ``WebSearchTools`` is the production family with the production guard, whose
transport replays recorded provider answers. Searches are reads: they run at once under the
default ceiling, after an approval when a request policy asks for one, and a rate limit is retried
after the provider's delay only when the deployment allows reads a second attempt.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.harness import decision, make_config, pending_approval, run_call, start_call
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES, ProbeTools
from tests.support.web_search import BRAVE_HOST, KEY, WIKIPEDIA_HOST, Providers
from toolcalls.activities.network.search import WebSearchTools
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, CapabilityPolicy, Effect, ErrorCode


def search_config(task_queue: str, **sections: Any) -> Any:
    return make_config(task_queue, tools=[*ALL_TOOL_NAMES, "web_search"], **sections)


@asynccontextmanager
async def search_worker(
    client: Client, task_queue: str, providers: Providers | None, **sections: Any
) -> AsyncIterator[None]:
    """A worker whose search family talks to ``providers`` (``None``: as configured)."""
    families: dict[type, object] = {ProbeTools: ProbeTools()}
    if providers is not None:
        families[WebSearchTools] = providers.tools()
    worker = build_worker(
        client, search_config(task_queue, **sections), families=ALL_FAMILIES, instances=families
    )
    async with worker:
        yield


async def test_searches_run_at_once_as_network_reads(client: Client, task_queue: str) -> None:
    providers = Providers()
    async with search_worker(client, task_queue, providers):
        wiki = await run_call(
            client, task_queue, "web_search", {"query": "concurrency", "engine": "wikipedia"}
        )
        brave = await run_call(client, task_queue, "web_search", {"query": "concurrency"})
    for result in (wiki, brave):
        assert result.status is CallStatus.COMPLETED, result.error
        assert result.capabilities == ["network.read"]
        assert result.approval is None
    assert wiki.output["engine"] == "wikipedia"
    assert wiki.output["untrusted_content"] is True
    assert [hit["title"] for hit in wiki.output["results"]] == [
        "Python (programming language)",
        "Structured concurrency",
        "AC/DC",
        "../../api/rest_v1/page/html/X",
    ]
    assert brave.output["more_results_available"] is True
    assert {hit["sponsored"] for hit in brave.output["results"]} == {False}
    assert [r.url.host for r in providers.requests] == [WIKIPEDIA_HOST, BRAVE_HOST]
    # The key reached Brave from the worker's side; it is nowhere in the call's record.
    assert KEY not in wiki.model_dump_json() + brave.model_dump_json()


async def test_a_search_runs_once_approved_under_a_request_policy(
    client: Client, task_queue: str
) -> None:
    providers = Providers()
    policy = CapabilityPolicy(rules={"network.read": Effect.REQUIRE_APPROVAL})
    arguments = {"query": " structured\nconcurrency ", "engine": "duckduckgo", "max_results": 3}
    async with search_worker(client, task_queue, providers):
        handle = await start_call(client, task_queue, "web_search", arguments, policy=policy)
        pending = await pending_approval(handle)
        assert providers.requests == []
        assert (pending.tool, pending.capabilities) == ("web_search", ["network.read"])
        assert pending.arguments == {
            "query": "structured concurrency",
            "max_results": 3,
            "engine": "duckduckgo",
            "freshness": "any",
        }
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="ann"))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.approval is not None
    assert (result.approval.approved, result.approval.approver) == (True, "ann")
    assert [hit["sponsored"] for hit in result.output["results"]] == [True, False, False]
    assert len(providers.requests) == 1


async def test_a_rate_limit_is_retried_after_its_delay_when_reads_may_retry(
    client: Client, task_queue: str
) -> None:
    providers = Providers()
    # Longer than Temporal's default first retry interval (1 s): the provider's delay decides.
    providers.answer(WIKIPEDIA_HOST, 429, headers={"retry-after": "2"})
    arguments = {"query": "q", "engine": "wikipedia"}

    async def recover() -> None:
        while not providers.requests:
            await asyncio.sleep(0.01)
        del providers.answers[WIKIPEDIA_HOST]

    async with search_worker(client, task_queue, providers, activities={"read_attempts": 2}):
        started = time.monotonic()
        result, _ = await asyncio.gather(
            run_call(client, task_queue, "web_search", arguments), recover()
        )
        elapsed = time.monotonic() - started
    assert result.status is CallStatus.COMPLETED, result.error
    assert len(providers.requests) == 2
    # A lower bound only, and a guaranteed one: the retry cannot come before the 2 s delay.
    assert elapsed >= 2.0


async def test_a_rate_limit_fails_the_call_when_reads_get_one_attempt(
    client: Client, task_queue: str
) -> None:
    providers = Providers()
    providers.answer(BRAVE_HOST, 429, headers={"retry-after": "1"})
    async with search_worker(client, task_queue, providers):
        result = await run_call(client, task_queue, "web_search", {"query": "q"})
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.EXECUTION_FAILED
    assert result.error.retryable
    assert "HTTP 429" in result.error.message
    assert len(providers.requests) == 1


async def test_the_configured_family_reads_the_key_from_the_worker_environment(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Built by worker.families from the configuration: no key, so Brave is never contacted.
    monkeypatch.delenv("BRAVE_SEARCH_API_KEY", raising=False)
    async with search_worker(client, task_queue, None, web_search={"engines": ["brave"]}):
        missing = await run_call(client, task_queue, "web_search", {"query": "q"})
        offered = await run_call(
            client, task_queue, "web_search", {"query": "q", "engine": "wikipedia"}
        )
    assert missing.status is CallStatus.FAILED
    assert missing.error is not None
    assert missing.error.code is ErrorCode.CONFIGURATION_ERROR
    assert "BRAVE_SEARCH_API_KEY" in missing.error.message
    assert offered.error is not None
    assert offered.error.code is ErrorCode.INVALID_ARGUMENTS
    assert offered.error.fixable_args == ["engine"]
