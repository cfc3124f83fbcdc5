"""Profiles and discovery through real workflows: what a profile lets a call use, its snapshot
identity, and discovery that never reveals what a call may not use."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from tests.support.harness import make_config, run_call, running_worker
from tests.support.parents import AgentParent, DefinitionsInput, DefinitionsParent, ParentInput
from tests.support.tools import ALL_FAMILIES
from toolcalls.activities.core import CORE
from toolcalls.worker.config import ConfigError, build_catalog
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    EventKind,
    ToolCallRequest,
)
from toolcalls.workflows.reach.client import ToolCallClient

PROFILES = {
    "math": {"tools": ["calculator", "search_tools", "read_tool"]},
    "probes": {"tools": ["probes.*", "search_tools", "read_tool"]},
}


def config(task_queue: str, **more: Any) -> Any:
    return make_config(
        task_queue,
        tools=[
            "calculator",
            "current_datetime",
            "ask_user",
            "search_tools",
            "read_tool",
            "probe_echo",
            "probe_write",
            "probe_method",
            "probe_nap",
        ],
        profiles=PROFILES,
        **more,
    )


def test_profiles_resolve_family_prefixes_and_refuse_unknown_entries(task_queue: str) -> None:
    catalog = build_catalog(config(task_queue), ALL_FAMILIES)
    assert catalog.settings.profiles["probes"] == [
        "probe_method",
        "probe_nap",
        "probe_echo",
        "probe_write",
        "search_tools",
        "read_tool",
    ]
    with pytest.raises(ConfigError, match=r"profiles\.bad\.tools: nope is not an enabled tool"):
        build_catalog(
            make_config(task_queue, profiles={"bad": {"tools": ["calculator", "nope"]}}),
            ALL_FAMILIES,
        )


def test_the_snapshot_identity_is_stable_and_follows_the_definitions(task_queue: str) -> None:
    first = build_catalog(config(task_queue), ALL_FAMILIES).profile_digest("math")
    again = build_catalog(config(task_queue), ALL_FAMILIES).profile_digest("math")
    assert first == again
    # The same profile over a calculator whose description changed is another snapshot.
    edited_core = replace(
        CORE,
        tools=tuple(
            replace(spec, description=spec.description + " Now with more.")
            if spec.name == "calculator"
            else spec
            for spec in CORE.tools
        ),
    )
    families = tuple(edited_core if f is CORE else f for f in ALL_FAMILIES)
    assert build_catalog(config(task_queue), families).profile_digest("math") != first
    assert build_catalog(config(task_queue), ALL_FAMILIES).profile_digest("probes") != first


async def test_a_call_inside_its_profile_runs_and_records_the_snapshot(
    client: Client, task_queue: str
) -> None:
    digest = build_catalog(config(task_queue), ALL_FAMILIES).profile_digest("math")
    async with running_worker(client, config(task_queue)):
        result = await run_call(
            client, task_queue, "calculator", {"expression": "1 + 1"}, profile="math"
        )
    assert result.status is CallStatus.COMPLETED
    assert (result.profile, result.profile_digest) == ("math", digest)


async def test_a_call_outside_its_profile_is_answered_as_an_unknown_tool(
    client: Client, task_queue: str
) -> None:
    widening = CapabilityPolicy(tools={"current_datetime": Effect.ALLOW})
    made_up = f"no_such_tool_{uuid.uuid4().hex}"
    async with running_worker(client, config(task_queue)) as probes:
        outside = await run_call(client, task_queue, "current_datetime", {}, profile="math")
        widened = await run_call(
            client, task_queue, "current_datetime", {}, profile="math", policy=widening
        )
        write = await run_call(client, task_queue, "probe_write", {"token": "t"}, profile="math")
        missing = await run_call(client, task_queue, made_up, {}, profile="math")
        unknown = await run_call(client, task_queue, "calculator", {"expression": "1"}, profile="x")
    answers = []
    for result in (outside, widened, write, missing):
        # A tool the deployment has but the profile lacks cannot be told from one it lacks: the
        # same status, code and message, which names only the profile's own tools.
        assert result.status is CallStatus.FAILED
        assert result.error is not None
        assert result.error.code is ErrorCode.UNKNOWN_TOOL
        assert result.error.message == (
            f"unknown tool {result.tool!r}; available: calculator, search_tools, read_tool"
        )
        answers.append(
            (result.status, result.error.code, result.error.message.replace(result.tool, "NAME"))
        )
        # Refused at plan: nothing asked a human, nothing ran, no policy widened it.
        assert EventKind.APPROVAL_REQUESTED not in [e.kind for e in result.events]
    assert len(set(answers)) == 1
    assert unknown.status is CallStatus.DENIED
    assert unknown.error is not None
    assert unknown.error.message == "no profile 'x' on this deployment"
    assert probes.runs == {}


async def test_discovery_sees_only_what_the_call_may_use(client: Client, task_queue: str) -> None:
    # The ceiling denies probe_write outright and network.write (probe_method can still GET);
    # the request's policy denies probe_echo.
    ceiling = {
        "rules": {"network.write": "deny"},
        "tools": {"probe_write": "deny"},
        "default_effect": "allow",
    }
    policy = CapabilityPolicy(tools={"probe_echo": Effect.DENY})
    hidden = ("no_such_tool", "calculator", "probe_echo", "probe_write")
    async with running_worker(client, config(task_queue, ceiling=ceiling)) as probes:
        found = await run_call(
            client, task_queue, "search_tools", {"query": "probe"}, profile="probes", policy=policy
        )
        in_math = await run_call(
            client, task_queue, "search_tools", {"query": "probe"}, profile="math"
        )
        answers = [
            await run_call(
                client, task_queue, "read_tool", {"name": name}, profile="probes", policy=policy
            )
            for name in hidden
        ]
        read = await run_call(
            client,
            task_queue,
            "read_tool",
            {"name": "probe_method", "format": "openai"},
            profile="probes",
            policy=policy,
        )
        called = await run_call(client, task_queue, "probe_write", {"token": "t"}, profile="probes")
        unknown = await run_call(client, task_queue, "no_such_tool", {}, profile="probes")
    assert found.status is CallStatus.COMPLETED, found.error
    assert found.output is not None
    # probe_method can still GET (network.read); probe_nap reads; the others no call may use.
    assert [item["name"] for item in found.output["items"]] == ["probe_method", "probe_nap"]
    assert in_math.output == {"items": [], "more_results": False}
    # Unknown, outside the profile, denied by the policy, denied by the ceiling: the same
    # answer, save the name.
    messages = []
    for name, answer in zip(hidden, answers, strict=True):
        assert answer.status is CallStatus.FAILED
        assert answer.error is not None
        assert answer.error.code is ErrorCode.INVALID_ARGUMENTS
        assert answer.error.fixable_args == ["name"]
        messages.append(answer.error.message.replace(name, "NAME"))
    assert messages == ["read_tool: no tool named 'NAME' is available to this call"] * len(hidden)
    assert read.output is not None
    definition = read.output["definition"]
    assert (definition["type"], definition["name"], definition["strict"]) == (
        "function",
        "probe_method",
        True,
    )
    # A direct call draws the line at the profile (docs/profiles.md says why): the ceiling-denied
    # tool is one the profile names, so its call is denied with the rule, not answered as unknown,
    # and the unknown tool's answer lists it among the profile's tools.
    assert called.status is CallStatus.DENIED
    assert called.error is not None
    assert (called.error.code, called.error.message) == (
        ErrorCode.POLICY_DENIED,
        "probe_write: denied by policy: tool:probe_write: deny (deployment rule tool:probe_write)",
    )
    assert EventKind.APPROVAL_REQUESTED not in [e.kind for e in called.events]
    assert unknown.status is CallStatus.FAILED
    assert unknown.error is not None
    assert (unknown.error.code, unknown.error.message) == (
        ErrorCode.UNKNOWN_TOOL,
        "unknown tool 'no_such_tool'; available: probe_method, probe_nap, probe_echo, "
        "probe_write, search_tools, read_tool",
    )
    assert probes.runs == {}


async def test_parents_and_applications_export_a_profile(client: Client, task_queue: str) -> None:
    catalog = build_catalog(config(task_queue), ALL_FAMILIES)
    async with running_worker(client, config(task_queue)):
        calls = ToolCallClient(client, task_queue=task_queue)
        exported = await calls.definitions(profile="math", format="mcp")
        assert exported.digest == catalog.profile_digest("math")
        assert exported.definitions == catalog.definitions("mcp", "math")
        assert [d["name"] for d in exported.definitions] == [
            "calculator",
            "search_tools",
            "read_tool",
        ]
        app_queue = f"app-{uuid.uuid4()}"
        async with Worker(
            client,
            task_queue=app_queue,
            workflows=[AgentParent, DefinitionsParent],
            workflow_runner=sandbox_runner(),
        ):
            from_parent = await client.execute_workflow(
                DefinitionsParent.run,
                DefinitionsInput(task_queue=task_queue, profile="math", format="openai"),
                id=f"parent-{uuid.uuid4()}",
                task_queue=app_queue,
            )
            assert from_parent.digest == exported.digest
            assert from_parent.definitions == catalog.definitions("openai", "math")
            outside = ToolCallRequest(tool="current_datetime", profile="probes", call_id="c1")
            output = await asyncio.wait_for(
                client.execute_workflow(
                    AgentParent.run,
                    ParentInput(task_queue=task_queue, batches=[[outside]]),
                    id=f"parent-{uuid.uuid4()}",
                    task_queue=app_queue,
                ),
                60,
            )
    (result,) = output.results
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.UNKNOWN_TOOL
    assert result.error.message.startswith("unknown tool 'current_datetime'; available: probe_")
