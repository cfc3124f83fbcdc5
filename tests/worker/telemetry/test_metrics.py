"""A real ``toolcalls worker --metrics`` process: calls that complete, fail, are denied and wait,
its ``/metrics`` scraped, its probes and its JSON log lines read; and a worker restarted with the
cache off, which replays a call's history without counting what it replays."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.common import RawValue

from tests.support.harness import decision, pending_approval, signal_decision, update_rejection
from tests.support.tools import ALL_TOOLS
from tests.worker.support import Spawn, Spawned, free_port, write_config
from tests.worker.telemetry.support import (
    label_values,
    probe,
    settled,
    total,
    until,
)
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.workflows.call import telemetry
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    WORKFLOW_NAME,
    CallStatus,
    CapabilityPolicy,
    Effect,
    PlanInput,
    ToolCallRequest,
    ToolCallResult,
)
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.reach.client_base import Handle

DASHBOARD = Path(__file__).resolve().parents[3] / "docker/grafana/dashboards/toolcalls.json"
APPROVE = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})


def worker_config(tmp_path: Path, task_queue: str, root: Path) -> Path:
    # No cache, so every workflow task replays the call's history so far: whatever the workflow
    # counts while replaying would be counted again. The calculator runs as a remote activity,
    # so that its result comes in a task of its own that replays the decision.
    return write_config(
        tmp_path,
        f'task_queue = "{task_queue}"\ntools = ["calculator", "list_files"]\n'
        'log_format = "json"\n'
        "[worker]\nmax_cached_workflows = 0\ngraceful_shutdown_seconds = 5\n"
        "[activities]\nlocal_pure_tools = false\n"
        "[payloads]\nmax_result_bytes = 1024\n"
        f'[files]\nroots = ["{root}"]\n'
        '[profiles.math]\ntools = ["calculator"]\n',
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    files = tmp_path / "files"
    (files / "few").mkdir(parents=True)
    (files / "many").mkdir()
    for index in range(3):
        (files / "few" / f"{index}.txt").write_text("x", encoding="utf-8")
    for index in range(60):
        (files / "many" / f"a-rather-long-file-name-{index:03}.txt").write_text("x")
    return files


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never answers: a Temporal that is not there yet."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def start_worker(spawn: Spawn, config: Path, address: str, port: int) -> Spawned:
    worker = spawn(
        "worker", "--config", str(config), "--address", address, "--metrics", f"127.0.0.1:{port}"
    )
    worker.wait_for_line("polling task queue", timeout=60)
    return worker


def stop(worker: Spawned) -> None:
    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(30) == 0, "".join(worker.stderr)[-2000:]


async def result(handle: Handle) -> Any:
    return await asyncio.wait_for(handle.result(), 60)


def json_lines(worker: Spawned) -> list[dict[str, Any]]:
    """The worker's log lines, each of which must be one JSON object."""
    lines = [line for line in worker.stderr if line.strip()]
    assert lines
    return [json.loads(line) for line in lines]


async def test_the_health_endpoints_before_and_after_the_worker_connects(
    tmp_path: Path, spawn: Spawn, address: str, silent_server: int, root: Path
) -> None:
    port = free_port()
    config = worker_config(tmp_path, f"health-{uuid.uuid4()}", root)
    waiting = spawn(
        "worker", "--config", str(config), "--address", f"127.0.0.1:{silent_server}",
        "--metrics", f"127.0.0.1:{port}",
    )  # fmt: skip
    await until(port, "/healthz", 200)
    # Alive, still connecting: not ready.
    assert await probe(port, "/readyz") == 503
    waiting.kill()

    worker = start_worker(spawn, config, address, port)
    await until(port, "/readyz", 200)
    assert await probe(port, "/healthz") == 200
    assert await probe(port, "/nothing") == 404
    stop(worker)
    assert await probe(port, "/healthz") == 0


async def test_the_counters_and_histograms_move_as_the_calls_end(
    tmp_path: Path, spawn: Spawn, address: str, client: Client, root: Path
) -> None:
    task_queue = f"metrics-{uuid.uuid4()}"
    port = free_port()
    worker = start_worker(spawn, worker_config(tmp_path, task_queue, root), address, port)
    tools = ToolCallClient(client, task_queue=task_queue)

    def calc(expression: str, **request: Any) -> ToolCallRequest:
        return ToolCallRequest(tool="calculator", arguments={"expression": expression}, **request)

    assert (await tools.call(calc("2 + 2"))).status is CallStatus.COMPLETED
    assert (await tools.call(calc("1 / 0"))).error.code == "execution_failed"  # type: ignore[union-attr]
    denied = CapabilityPolicy(tools={"calculator": Effect.DENY})
    assert (await tools.call(calc("1", policy=denied))).error.code == "policy_denied"  # type: ignore[union-attr]
    unknown = await tools.call(ToolCallRequest(tool="no_such_tool", arguments={}))
    assert unknown.error is not None
    assert unknown.error.code == "unknown_tool"

    approved = await tools.start(calc("3 * 3", policy=APPROVE))
    pending = await pending_approval(approved)
    stale = decision(pending, request_id="stale")
    assert "unknown or stale request id" in await update_rejection(
        approved, ToolCallWorkflow.decide, stale
    )
    await approved.signal(ToolCallWorkflow.approve, signal_decision(pending, digest="wrong"))
    await approved.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
    assert (await result(approved)).status is CallStatus.COMPLETED

    refused = await tools.start(calc("4 * 4", policy=APPROVE))
    await refused.signal(
        ToolCallWorkflow.deny, signal_decision(await pending_approval(refused), approver="bob")
    )
    assert (await result(refused)).error.code == "approval_denied"

    answered = await tools.start(calc("7 * 7", policy=APPROVE))
    reply = decision(await pending_approval(answered), approved=False, response="It is 49.")
    await answered.execute_update(ToolCallWorkflow.decide, reply)
    assert (await result(answered)).error.code == "responded"

    expiring = await tools.start(calc("5", policy=APPROVE, approval_timeout=timedelta(seconds=1)))
    assert (await result(expiring)).error.code == "approval_timed_out"

    few = await tools.call(
        ToolCallRequest(tool="list_files", arguments={"path": str(root / "few"), "max_results": 1})
    )
    assert few.output is not None
    assert few.output["truncated"] is True
    many = await tools.call(
        ToolCallRequest(tool="list_files", arguments={"path": str(root / "many")})
    )
    assert many.error is not None
    assert many.error.code == "output_too_large"

    # Each call counts as it ends; the tools' durations (five runs) as the activities end.
    await settled(port, "toolcalls_calls_total", 10)
    samples = await settled(port, "toolcalls_tool_duration_seconds_count", 5)
    calls = "toolcalls_calls_total"
    assert total(samples, calls, tool="calculator", status="completed") == 2
    assert total(samples, calls, tool="calculator", status="failed") == 1
    assert total(samples, calls, tool="calculator", status="denied") == 4
    assert total(samples, calls, tool="list_files", status="completed") == 1
    assert total(samples, calls, tool="list_files", status="failed") == 1
    # The model chose the name: it is no label.
    assert total(samples, calls, tool="unknown", status="failed") == 1
    assert "no_such_tool" not in label_values(samples, calls, "tool")
    assert total(samples, calls) == 10
    assert total(samples, calls, workflow_type="ToolCallWorkflow", task_queue=task_queue) == 10

    errors = "toolcalls_call_errors_total"
    for code in (
        "execution_failed",
        "policy_denied",
        "unknown_tool",
        "approval_denied",
        "approval_timed_out",
        "responded",
        "output_too_large",
    ):
        assert total(samples, errors, code=code) == 1, code
    assert total(samples, errors) == 7

    decisions = "toolcalls_decisions_total"
    assert total(samples, decisions, channel="update", outcome="approved") == 1
    assert total(samples, decisions, channel="update", outcome="rejected") == 1
    assert total(samples, decisions, channel="signal", outcome="ignored") == 1
    assert total(samples, decisions, channel="signal", outcome="denied") == 1
    assert total(samples, decisions, channel="update", outcome="responded") == 1
    assert total(samples, decisions) == 5

    wait = "toolcalls_approval_wait_seconds"
    for outcome in ("approved", "denied", "responded", "timed_out"):
        assert total(samples, f"{wait}_count", tool="calculator", outcome=outcome) == 1, outcome
    assert total(samples, f"{wait}_sum", outcome="timed_out") >= 1
    assert total(samples, f"{wait}_bucket", outcome="timed_out", le="+Inf") == 1
    assert total(samples, f"{wait}_bucket", outcome="timed_out", le="1") == 0

    duration = "toolcalls_tool_duration_seconds"
    assert total(samples, f"{duration}_count", tool="calculator", outcome="completed") == 2
    assert total(samples, f"{duration}_count", tool="calculator", outcome="execution_failed") == 1
    assert total(samples, f"{duration}_count", tool="list_files", outcome="output_too_large") == 1
    assert total(samples, "toolcalls_results_truncated_total", tool="list_files") == 1
    assert total(samples, "toolcalls_payloads_refused_total", tool="list_files", what="result") == 1
    # The SDK's own runtime metrics are on the same endpoint.
    assert total(samples, "temporal_workflow_completed_total", task_queue=task_queue) == 10

    # Every series the compose file's dashboard plots is one this worker exports.
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    queries = " ".join(target["expr"] for panel in panels for target in panel["targets"])
    plotted = set(re.findall(r"\b(?:toolcalls|temporal)_[a-z_]+", queries))
    assert plotted <= {name for name, _ in samples}, plotted - {name for name, _ in samples}

    stop(worker)
    check_json_logs(json_lines(worker), approved=approved.id)


def check_json_logs(lines: list[dict[str, Any]], approved: str) -> None:
    for line in lines:
        assert {"time", "level", "logger", "message"} <= set(line), line
    ended = [
        line for line in lines if line.get("status") and line["logger"] == "temporalio.workflow"
    ]
    assert len(ended) == 10
    by_code = {line.get("error_code"): line for line in ended}
    assert by_code["responded"]["status"] == "denied"
    line = by_code["execution_failed"]
    assert line["tool"] == "calculator"
    assert line["status"] == "failed"
    assert line["call_id"]
    assert line["workflow_id"] == line["temporal_workflow"]["workflow_id"]
    assert "attempt" not in line["message"]  # the details are fields, not in the message
    assert by_code["unknown_tool"]["tool"] == "unknown"
    assert by_code[None]["status"] == "completed"
    # The tool's expected failure, logged where it happened.
    failures = {
        line["error_code"]: line
        for line in lines
        if line["logger"] == "toolcalls.activities.runtime"
    }
    assert set(failures) == {"execution_failed", "output_too_large"}
    failure = failures["execution_failed"]
    assert failure["workflow_id"] == line["workflow_id"]
    assert failure["call_id"] == line["call_id"]
    assert failure["tool"] == "calculator"
    [logged] = [line for line in ended if line["workflow_id"] == approved]
    assert logged["status"] == "completed"


@pytest.mark.parametrize(
    ("tool", "arguments", "profile", "found"),
    [
        ("calculator", {"expression": "1"}, None, True),
        ("calculator", {"bogus": 1}, None, True),
        ("calculator", {"expression": "1"}, "math", True),
        ("no_such_tool", {}, None, False),
        ("no_such_tool", {}, "math", False),
        ("list_files", {"path": "/"}, "math", False),
        ("calculator", {"expression": "1"}, "nope", False),
    ],
)
def test_the_plans_answer_says_whether_the_tool_may_label_the_call(
    tool: str, arguments: dict[str, Any], profile: str | None, found: bool
) -> None:
    catalog = Catalog(
        ALL_TOOLS,
        CatalogSettings(enabled=["calculator", "list_files"], profiles={"math": ["calculator"]}),
    )
    request = PlanInput(tool=tool, arguments=arguments, profile=profile)
    outcome = catalog.plan(request, default_ceiling(), frozenset())
    assert telemetry.tool_found(outcome) is found


async def test_a_made_up_tool_name_is_never_a_label(
    tmp_path: Path, spawn: Spawn, address: str, client: Client, root: Path
) -> None:
    task_queue = f"labels-{uuid.uuid4()}"
    port = free_port()
    worker = start_worker(spawn, worker_config(tmp_path, task_queue, root), address, port)
    tools = ToolCallClient(client, task_queue=task_queue)
    made_up = f"no_such_tool_{uuid.uuid4().hex}"
    requests = [
        ToolCallRequest(tool=made_up, arguments={}),
        # Refused before the plan looks the tool up: a profile the deployment does not have, a
        # profile that does not hold it.
        ToolCallRequest(tool=made_up, arguments={}, profile="nope"),
        ToolCallRequest(tool=made_up, arguments={}, profile="math"),
    ]
    codes = [(await tools.call(request)).error.code for request in requests]  # type: ignore[union-attr]
    assert codes == ["unknown_tool", "policy_denied", "unknown_tool"]
    # Arguments JSON cannot carry (a NaN no Python client sends) are refused before any plan.
    nan = f'{{"tool": "{made_up}", "arguments": {{"x": NaN}}}}'
    raw = RawValue(Payload(metadata={"encoding": b"json/plain"}, data=nan.encode()))
    refused = await client.execute_workflow(
        WORKFLOW_NAME, raw, id=f"nan-{uuid.uuid4()}", task_queue=task_queue,
        result_type=ToolCallResult,
    )  # fmt: skip
    assert refused.error is not None
    assert refused.error.code == "invalid_arguments"
    # A tool the deployment has, outside the profile: the plan answers it as an unknown tool,
    # and so does its label.
    outside = await tools.call(ToolCallRequest(tool="list_files", arguments={}, profile="math"))
    assert outside.error is not None
    assert outside.error.code == "unknown_tool"

    samples = await settled(port, "toolcalls_calls_total", 5)
    calls, errors = "toolcalls_calls_total", "toolcalls_call_errors_total"
    assert total(samples, calls) == 5
    assert total(samples, calls, tool="unknown") == 5
    assert total(samples, errors, tool="unknown", code="unknown_tool") == 3
    assert total(samples, errors, tool="unknown", code="invalid_arguments") == 1
    assert total(samples, errors, tool="unknown", code="policy_denied") == 1
    assert total(samples, errors) == 5
    for name in {name for name, _ in samples if name.startswith("toolcalls_")}:
        # The deployment's tools are there too, at zero, in the counters made at the start.
        assert label_values(samples, name, "tool") <= {"unknown", "calculator", "list_files"}, name
        assert total(samples, name, tool="calculator") == 0, name
    assert not any(made_up in value for _, labels in samples for _, value in labels)
    stop(worker)


async def test_a_restarted_worker_replays_a_call_without_counting_it_twice(
    tmp_path: Path, spawn: Spawn, address: str, client: Client, root: Path
) -> None:
    task_queue = f"replayed-{uuid.uuid4()}"
    port = free_port()
    config = worker_config(tmp_path, task_queue, root)
    tools = ToolCallClient(client, task_queue=task_queue)

    first = start_worker(spawn, config, address, port)
    handle = await tools.start(
        ToolCallRequest(tool="calculator", arguments={"expression": "7 * 6"}, policy=APPROVE)
    )
    pending = await pending_approval(handle)
    await handle.signal(ToolCallWorkflow.approve, signal_decision(pending, digest="wrong"))
    samples = await settled(port, "toolcalls_decisions_total", 1)
    assert total(samples, "toolcalls_decisions_total", channel="signal", outcome="ignored") == 1
    stop(first)

    second = start_worker(spawn, config, address, port)
    await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
    assert (await result(handle)).status is CallStatus.COMPLETED
    samples = await settled(port, "toolcalls_calls_total", 1)
    # The second worker replayed the whole history (the ignored signal, the request, the
    # decision) in every task, and counted only what happened while it ran.
    assert total(samples, "toolcalls_decisions_total", channel="signal") == 0
    assert total(samples, "toolcalls_decisions_total", channel="update", outcome="approved") == 1
    assert total(samples, "toolcalls_calls_total", tool="calculator", status="completed") == 1
    assert total(samples, "toolcalls_approval_wait_seconds_count", outcome="approved") == 1
    assert total(samples, "toolcalls_tool_duration_seconds_count", tool="calculator") == 1
    stop(second)
