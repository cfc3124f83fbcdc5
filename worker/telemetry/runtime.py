"""The worker's Temporal runtime: its metrics' service name and its core logs.

The SDK's core (the Rust part of ``temporalio``) labels every metric ``service_name =
"temporal-core-sdk"`` unless told otherwise, and writes its own log lines straight to stderr, in a
format of its own. The worker's runtime labels metrics with ``[telemetry] service_name`` instead
and forwards core's lines (WARN and above) to the Python logger ``temporalio.core``, so they take
the worker's log format and level like any other line.

One core warning is routine and is logged at DEBUG: ``Query not found when attempting to respond
to it``. A client gave up on a query (its deadline passed, it was cancelled) before the worker
answered; the server has forgotten the query and says so. The client saw its own error.
"""

from __future__ import annotations

import logging

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    MetricBuffer,
    OpenTelemetryConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

from toolcalls.worker.telemetry.settings import TelemetrySection

CORE_LOGGER = "temporalio.core"
"""The Python logger core's log lines are forwarded to."""
CORE_LEVEL = "WARN"
ROUTINE_CORE_MESSAGES = ("Query not found when attempting to respond to it",)
"""Core warnings about nothing an operator can act on: logged at DEBUG."""


class RoutineCoreLines(logging.Filter):
    """Moves core's routine warnings (``ROUTINE_CORE_MESSAGES``) to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        entry = getattr(record, "temporal_log", None)
        message = getattr(entry, "message", None)
        if not isinstance(message, str):
            message = record.getMessage()
        if not message.startswith(ROUTINE_CORE_MESSAGES):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def worker_runtime(
    section: TelemetrySection,
    metrics: OpenTelemetryConfig | PrometheusConfig | MetricBuffer | None = None,
) -> Runtime:
    """A runtime labelling its metrics (``metrics``, if any) with ``section``'s service name and
    forwarding core's log lines to the ``temporalio.core`` logger."""
    return Runtime(telemetry=telemetry_config(section, metrics))


def telemetry_config(
    section: TelemetrySection,
    metrics: OpenTelemetryConfig | PrometheusConfig | MetricBuffer | None = None,
) -> TelemetryConfig:
    """The ``TelemetryConfig`` of ``worker_runtime``."""
    logger = logging.getLogger(CORE_LOGGER)
    if not any(isinstance(each, RoutineCoreLines) for each in logger.filters):
        logger.addFilter(RoutineCoreLines())
    forwarding = LogForwardingConfig(logger=logger, append_target_to_name=False)
    return TelemetryConfig(
        logging=LoggingConfig(
            filter=TelemetryFilter(core_level=CORE_LEVEL, other_level="ERROR"),
            forwarding=forwarding,
        ),
        metrics=metrics,
        # Core's own label would say "temporal-core-sdk" on every metric; ours names the service.
        attach_service_name=False,
        global_tags={"service_name": section.service_name},
    )
