"""What a worker tells operators: traces, metrics, health endpoints and structured logs.

``settings`` (the ``[telemetry]`` section, ``log_format``), ``logs`` (the JSON formatter),
``tracing`` (the SDK's OpenTelemetry interceptor and the ``OTEL_*`` exporters, with the ``otel``
extra), ``runtime`` (the worker's Temporal runtime: the metrics' service name, core's log lines
in Python's logging), ``endpoint`` (the SDK's runtime metrics and the ``/metrics``, ``/healthz``,
``/readyz`` listener), ``counters`` (the counters made at zero when the worker connects). The
metrics themselves are recorded where they happen:
``toolcalls.workflows.call.telemetry`` and ``toolcalls.activities.telemetry``;
docs/observability.md lists them all.
"""

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
