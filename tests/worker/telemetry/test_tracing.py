"""Traces across the application, a parent workflow, ``ToolCallWorkflow`` and the tool, collected
with the OpenTelemetry SDK's in-memory exporter from real workers on the session's dev server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.worker import Worker

from tests.support.harness import make_config, pending_approval, running_worker
from tests.support.parents import AgentParent, ParentInput
from toolcalls.worker.plugin import ToolCallsPlugin, sandbox_runner
from toolcalls.workflows.call import telemetry
from toolcalls.workflows.models.approval import ApprovalDecision
from toolcalls.workflows.models.call import CallStatus, CapabilityPolicy, Effect, ToolCallRequest
from toolcalls.workflows.reach.client import ToolCallClient

SECRET = "1234567 + 7654321"
"""An argument no span may carry, nor its result."""
SECRET_PARTS = ("1234567", "7654321", "8888888")


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


@pytest.fixture
def tracer(exporter: InMemorySpanExporter) -> Tracer:
    # A provider of the test's own: OpenTelemetry's global one can be set once per process.
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("tests")


@pytest.fixture
def traced(client: Client, tracer: Tracer) -> Client:
    """The session's client with the SDK's tracing interceptor on our tracer."""
    settings = client.config()
    settings["interceptors"] = [TracingInterceptor(tracer)]
    return Client(**settings)


@asynccontextmanager
async def parent_worker(client: Client) -> AsyncIterator[str]:
    queue = f"app-{uuid.uuid4()}"
    async with Worker(
        client, task_queue=queue, workflows=[AgentParent], workflow_runner=sandbox_runner()
    ):
        yield queue


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    found = by_name(spans, name)
    assert len(found) == 1, (name, [span.name for span in spans])
    return found[0]


def ancestors(spans: tuple[ReadableSpan, ...], span: ReadableSpan) -> list[str]:
    """The names of ``span``'s parents, nearest first."""
    ids = {s.context.span_id: s for s in spans if s.context is not None}
    names = []
    parent = span.parent
    while parent is not None and parent.span_id in ids:
        found = ids[parent.span_id]
        names.append(found.name)
        parent = found.parent
    return names


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def assert_no_argument_values(spans: tuple[ReadableSpan, ...]) -> None:
    for span in spans:
        for key, value in attributes(span).items():
            text = str(value)
            assert not any(part in text for part in SECRET_PARTS), (span.name, key, text)
        for event in span.events:
            assert not any(part in str(event.attributes) for part in SECRET_PARTS), span.name


async def test_a_trace_runs_from_the_application_through_the_parent_to_the_tool(
    traced: Client, tracer: Tracer, exporter: InMemorySpanExporter, task_queue: str
) -> None:
    request = ToolCallRequest(
        tool="calculator", arguments={"expression": SECRET}, call_id="traced-1"
    )
    async with running_worker(traced, make_config(task_queue)), parent_worker(traced) as queue:
        with tracer.start_as_current_span("application") as application:
            handle = await traced.start_workflow(
                AgentParent.run,
                ParentInput(task_queue=task_queue, batches=[[request]]),
                id=f"parent-{uuid.uuid4()}",
                task_queue=queue,
            )
            output = await asyncio.wait_for(handle.result(), 60)
    assert output.results[0].status is CallStatus.COMPLETED
    assert output.results[0].output == {"expression": SECRET, "result": 8888888}

    spans = exporter.get_finished_spans()
    trace_id = application.get_span_context().trace_id
    assert {span.context.trace_id for span in spans if span.context} == {trace_id}
    for name in (telemetry.SPAN_PLAN, telemetry.SPAN_DECIDE, telemetry.SPAN_EXECUTE):
        chain = ancestors(spans, one(spans, name))
        # Our spans sit under the child's start, which sits under the parent's run, which the
        # application started.
        assert chain[0] == "StartChildWorkflow:ToolCallWorkflow", (name, chain)
        assert chain[-2:] == ["StartWorkflow:AgentParent", "application"], (name, chain)
    # The plan ran the calculator itself (an allowed pure tool): its activity is the plan's.
    assert "StartChildWorkflow:ToolCallWorkflow" in ancestors(
        spans, one(spans, "RunActivity:toolcalls.plan")
    )
    assert ancestors(spans, one(spans, "RunWorkflow:ToolCallWorkflow"))[0] == (
        "StartChildWorkflow:ToolCallWorkflow"
    )

    plan = attributes(one(spans, telemetry.SPAN_PLAN))
    assert plan["toolcalls.tool"] == "calculator"
    assert plan["toolcalls.call_id"] == "traced-1"
    assert plan["toolcalls.side_effect"] == "pure"
    assert attributes(one(spans, telemetry.SPAN_DECIDE))["toolcalls.effect"] == "allow"
    result = attributes(one(spans, telemetry.SPAN_RESULT))
    assert result["toolcalls.status"] == "completed"
    assert "toolcalls.error_code" not in result
    assert result["temporalWorkflowID"] == f"{handle.id}/tools/traced-1"
    assert_no_argument_values(spans)


async def test_the_approval_wait_has_its_spans_with_the_approver(
    traced: Client, tracer: Tracer, exporter: InMemorySpanExporter, task_queue: str
) -> None:
    tools = ToolCallClient(traced, task_queue=task_queue)
    policy = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})
    async with running_worker(traced, make_config(task_queue)):
        with tracer.start_as_current_span("application"):
            approved = await tools.start(
                ToolCallRequest(tool="calculator", arguments={"expression": SECRET}, policy=policy)
            )
            pending = await pending_approval(approved)
            await approved.execute_update(
                "decide",
                ApprovalDecision(
                    request_id=pending.request_id,
                    digest=pending.digest,
                    approved=True,
                    approver="alice",
                ),
            )
            first = await asyncio.wait_for(approved.result(), 60)
            expiring = await tools.start(
                ToolCallRequest(
                    tool="probe_echo",
                    arguments={"text": SECRET},
                    policy=CapabilityPolicy(rules={"network.read": Effect.REQUIRE_APPROVAL}),
                    approval_timeout=timedelta(seconds=1),
                )
            )
            second = await asyncio.wait_for(expiring.result(), 60)
    assert first.status is CallStatus.COMPLETED
    assert second.status is CallStatus.DENIED

    spans = exporter.get_finished_spans()
    assert len(by_name(spans, telemetry.SPAN_APPROVAL_REQUESTED)) == 2
    decided = one(spans, telemetry.SPAN_APPROVAL_DECIDED)
    assert attributes(decided)["toolcalls.approver"] == "alice"
    assert attributes(decided)["toolcalls.channel"] == "update"
    assert attributes(decided)["toolcalls.approved"] is True
    # Decided in the update's handler, still in the call's trace under the application.
    assert ancestors(spans, decided)[-2:] == ["StartWorkflow:ToolCallWorkflow", "application"]
    timed_out = one(spans, telemetry.SPAN_APPROVAL_TIMED_OUT)
    assert attributes(timed_out)["temporalWorkflowID"] == expiring.id
    assert attributes(timed_out)["toolcalls.waited_seconds"] >= 1
    results = {
        attributes(span)["temporalWorkflowID"]: attributes(span)
        for span in by_name(spans, telemetry.SPAN_RESULT)
    }
    assert results[approved.id]["toolcalls.status"] == "completed"
    assert results[expiring.id]["toolcalls.status"] == "denied"
    assert results[expiring.id]["toolcalls.error_code"] == "approval_timed_out"
    assert results[expiring.id]["toolcalls.capabilities"] == ("network.read",)
    assert "toolcalls.capabilities" not in results[approved.id]  # the calculator needs none
    assert_no_argument_values(spans)


async def test_without_the_interceptor_the_workflow_makes_no_spans(
    client: Client, exporter: InMemorySpanExporter, task_queue: str
) -> None:
    async with running_worker(client, make_config(task_queue)):
        tools = ToolCallClient(client, task_queue=task_queue)
        result = await tools.call(ToolCallRequest(tool="calculator", arguments={"expression": "1"}))
    assert result.status is CallStatus.COMPLETED
    assert exporter.get_finished_spans() == ()


def test_the_plugin_adds_one_tracing_interceptor_when_asked() -> None:
    assert ToolCallsPlugin(tracing=False).interceptors is None
    [first] = ToolCallsPlugin(tracing=True).interceptors or []
    [second] = (
        ToolCallsPlugin(environ={"OTEL_TRACES_EXPORTER": "none"}, tracing=True).interceptors or []
    )
    assert isinstance(first, TracingInterceptor)
    # One per process, so a worker built from a traced client does not trace twice.
    assert first is second


async def test_the_application_client_traces_when_asked(address: str) -> None:
    plain = await ToolCallClient.connect(address)
    traced = await ToolCallClient.connect(address, tracing=True)
    assert not any(isinstance(i, TracingInterceptor) for i in plain.client.config()["interceptors"])
    assert any(isinstance(i, TracingInterceptor) for i in traced.client.config()["interceptors"])
