"""Traces exported as ``OTEL_*`` say: a real worker process and a real ``toolcalls call`` send
their spans over OTLP/HTTP to a receiver on loopback, and they make one trace; the console
exporter writes to stderr, so ``--json`` output stays whole."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.worker.support import Spawn, hermetic_env, toolcalls, write_config
from toolcalls.worker.telemetry.tracing import tracing_configured
from toolcalls.workflows.call import telemetry

EXPORT_TIMEOUT = 30
"""Seconds for the spans to arrive: generous, to catch a hang."""


class Receiver:
    """An OTLP/HTTP trace receiver: what each process exported, span by span."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def names(self) -> set[str]:
        with self.lock:
            return {span["name"] for span in self.spans}

    def wait_for(self, *names: str) -> list[dict[str, Any]]:
        deadline = time.monotonic() + EXPORT_TIMEOUT
        while not set(names) <= self.names():
            assert time.monotonic() < deadline, f"never exported: {set(names) - self.names()}"
            time.sleep(0.1)
        with self.lock:
            return list(self.spans)


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, int]]:
    received = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest.FromString(body)
            with received.lock:
                for resource in request.resource_spans:
                    service = {
                        a.key: a.value.string_value for a in resource.resource.attributes
                    }.get("service.name")
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            received.spans.append(
                                {
                                    "name": span.name,
                                    "service": service,
                                    "trace_id": span.trace_id.hex(),
                                    "span_id": span.span_id.hex(),
                                    "parent": span.parent_span_id.hex(),
                                    "attributes": {a.key: a.value for a in span.attributes},
                                }
                            )
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield received, server.server_address[1]
    server.shutdown()
    server.server_close()


def otel_env(tmp_path: Path, port: int, service: str) -> dict[str, str]:
    return hermetic_env(
        tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_SERVICE_NAME=service,
        OTEL_BSP_SCHEDULE_DELAY="100",
    )


def test_which_variables_turn_tracing_on() -> None:
    assert not tracing_configured({})
    assert tracing_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"})
    assert tracing_configured({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    assert tracing_configured({"OTEL_TRACES_EXPORTER": "console"})
    off = {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}
    assert not tracing_configured(off)
    assert not tracing_configured({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"})


async def test_the_worker_and_the_cli_export_one_trace_over_otlp(
    tmp_path: Path, spawn: Spawn, address: str, receiver: tuple[Receiver, int]
) -> None:
    received, port = receiver
    task_queue = f"otlp-{uuid.uuid4()}"
    config = write_config(tmp_path, f'task_queue = "{task_queue}"\ntools = ["calculator"]\n')
    worker = spawn(
        "worker", "--config", str(config), "--address", address,
        env=otel_env(tmp_path, port, "toolcalls-worker"),
    )  # fmt: skip
    await asyncio.to_thread(worker.wait_for_line, "polling task queue", 60)

    done = await toolcalls(
        tmp_path,
        "call", "calculator", '{"expression": "1234567 + 1"}', "--address", address,
        "--task-queue", task_queue,
        env=otel_env(tmp_path, port, "toolcalls-cli"),
    )  # fmt: skip
    assert done.code == 0, done.stderr
    spans = await asyncio.to_thread(
        received.wait_for, "StartWorkflow:ToolCallWorkflow", telemetry.SPAN_RESULT
    )
    start = next(s for s in spans if s["name"] == "StartWorkflow:ToolCallWorkflow")
    # The command flushed its span before it left.
    assert start["service"] == "toolcalls-cli"
    ours = [s for s in spans if s["name"].startswith("toolcalls.")]
    assert {s["name"] for s in ours} >= {
        telemetry.SPAN_PLAN,
        telemetry.SPAN_DECIDE,
        telemetry.SPAN_EXECUTE,
        telemetry.SPAN_RESULT,
    }
    for span in ours:
        assert span["service"] == "toolcalls-worker"
        assert span["trace_id"] == start["trace_id"]
        assert span["parent"] == start["span_id"]
        assert span["attributes"]["toolcalls.tool"].string_value == "calculator"
        assert "1234567" not in str(span["attributes"])
    worker.kill()


async def test_console_spans_go_to_stderr_and_leave_json_output_whole(
    tmp_path: Path, spawn: Spawn, address: str
) -> None:
    task_queue = f"console-{uuid.uuid4()}"
    config = write_config(tmp_path, f'task_queue = "{task_queue}"\ntools = ["calculator"]\n')
    worker = spawn("worker", "--config", str(config), "--address", address)
    await asyncio.to_thread(worker.wait_for_line, "polling task queue", 60)

    done = await toolcalls(
        tmp_path,
        "call", "calculator", '{"expression": "6 * 7"}', "--json", "--address", address,
        "--task-queue", task_queue,
        env=hermetic_env(tmp_path, OTEL_TRACES_EXPORTER="console"),
    )  # fmt: skip
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["output"]["result"] == 42
    # The command's span was exported, on stderr.
    assert '"name": "StartWorkflow:ToolCallWorkflow"' in done.stderr
    worker.kill()
