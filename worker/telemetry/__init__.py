"""What a worker tells operators: traces, metrics, health endpoints and structured logs.

``settings`` (the ``[telemetry]`` section, ``log_format``), ``logs`` (the JSON formatter),
``tracing`` (the SDK's OpenTelemetry interceptor and the ``OTEL_*`` exporters, with the ``otel``
extra), ``runtime`` (the worker's Temporal runtime: the metrics' service name, core's log lines
in Python's logging), ``endpoint`` (the SDK's runtime metrics and the ``/metrics``, ``/healthz``,
``/readyz`` listener), ``counters`` (the counters made at zero when the worker connects). The
metrics themselves are recorded where they happen:
``toolcalls.workflows.call.telemetry`` and ``toolcalls.activities.telemetry``;
docs/observability.md lists them all.

Each name below is imported on first use: the command line reads the settings and the log
formatter without loading the SDK's worker for the endpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcalls._lazy import lazy_names

if TYPE_CHECKING:
    from toolcalls.worker.telemetry.endpoint import Health, MetricsEndpoint, metrics_runtime
    from toolcalls.worker.telemetry.logs import JsonFormatter, configure_logging
    from toolcalls.worker.telemetry.settings import LogFormat, TelemetrySection
    from toolcalls.worker.telemetry.tracing import (
        TracingUnavailable,
        install_tracer_provider,
        tracing_configured,
        tracing_interceptor,
    )

__all__ = [
    "Health",
    "JsonFormatter",
    "LogFormat",
    "MetricsEndpoint",
    "TelemetrySection",
    "TracingUnavailable",
    "configure_logging",
    "install_tracer_provider",
    "metrics_runtime",
    "tracing_configured",
    "tracing_interceptor",
]

_WHERE = {
    "Health": "toolcalls.worker.telemetry.endpoint",
    "JsonFormatter": "toolcalls.worker.telemetry.logs",
    "LogFormat": "toolcalls.worker.telemetry.settings",
    "MetricsEndpoint": "toolcalls.worker.telemetry.endpoint",
    "TelemetrySection": "toolcalls.worker.telemetry.settings",
    "TracingUnavailable": "toolcalls.worker.telemetry.tracing",
    "configure_logging": "toolcalls.worker.telemetry.logs",
    "install_tracer_provider": "toolcalls.worker.telemetry.tracing",
    "metrics_runtime": "toolcalls.worker.telemetry.endpoint",
    "tracing_configured": "toolcalls.worker.telemetry.tracing",
    "tracing_interceptor": "toolcalls.worker.telemetry.tracing",
}
"""The module each public name lives in."""

__getattr__, __dir__ = lazy_names(__name__, _WHERE)
