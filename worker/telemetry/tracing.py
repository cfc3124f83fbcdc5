"""Traces: the SDK's OpenTelemetry ``TracingInterceptor`` and exporters from ``OTEL_*``.

Tracing is on when the standard variables name an exporter: ``OTEL_TRACES_EXPORTER`` (``otlp``,
``console``, which writes to stderr; ``none`` turns it off) or an OTLP endpoint
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``);
``OTEL_SDK_DISABLED=true`` turns it off. Nothing is exported otherwise. The OTLP exporter reads
its own variables (endpoint, headers, certificates, ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``grpc``,
the default, or ``http/protobuf``); ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name
the process. All of it needs the ``otel`` extra (``opentelemetry-sdk``,
``opentelemetry-exporter-otlp``).

A process keeps one tracer provider (OpenTelemetry's global one: an application that set its own
keeps it) and one interceptor, so a client and the worker built from it never trace twice.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from temporalio.contrib.opentelemetry import TracingInterceptor

OTEL_EXTRA = "pip install 'toolcalls[otel]'"
DEFAULT_SERVICE_NAME = "toolcalls"
FLUSH_TIMEOUT_SECONDS = 3.0
_OFF = ("", "none")

_interceptor: TracingInterceptor | None = None
_provider: Any = None
"""The tracer provider this module installed, if it did: flushed by ``shutdown``."""


class TracingUnavailable(RuntimeError):
    """``OTEL_*`` asks for traces but the ``otel`` extra is not installed."""


def tracing_configured(environ: Mapping[str, str]) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces to be exported."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = environ.get("OTEL_TRACES_EXPORTER")
    if exporters is not None:
        return exporters.strip().lower() not in _OFF
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def tracing_interceptor() -> TracingInterceptor:
    """The process's ``TracingInterceptor``: give it to clients and workers.

    Raises:
        TracingUnavailable: the ``otel`` extra is not installed.
    """
    global _interceptor
    if _interceptor is None:
        try:
            from temporalio.contrib.opentelemetry import TracingInterceptor
        except ImportError:
            raise TracingUnavailable(
                f"tracing is configured (OTEL_*) but OpenTelemetry is not installed: {OTEL_EXTRA}"
            ) from None
        _interceptor = TracingInterceptor()
    return _interceptor


def install_tracer_provider(environ: Mapping[str, str]) -> bool:
    """Install a tracer provider exporting as ``OTEL_*`` say, unless the application already
    installed one; whether traces are configured at all.

    Raises:
        TracingUnavailable: the ``otel`` extra is not installed, or an exporter it names is not.
    """
    global _provider
    if not tracing_configured(environ):
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise TracingUnavailable(
            f"tracing is configured (OTEL_*) but the OpenTelemetry SDK is not installed: "
            f"{OTEL_EXTRA}"
        ) from None
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return True
    name = environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    chosen = environ.get("OTEL_TRACES_EXPORTER") or "otlp"
    for exporter in (part.strip().lower() for part in chosen.split(",")):
        if exporter not in _OFF:
            provider.add_span_processor(BatchSpanProcessor(_exporter(exporter, environ)))
    trace.set_tracer_provider(provider)
    _provider = provider
    return True


def shutdown() -> None:
    """Export what is still buffered, waiting ``FLUSH_TIMEOUT_SECONDS`` at most (a process that
    ends with ``os._exit`` must call this): a collector that is down must not hold up the exit
    through the exporter's retries."""
    if _provider is not None:
        # The SDK's flush exports in the calling thread and its timeout does not bound the
        # exporter's retries: a thread of its own does.
        flushing = threading.Thread(target=_provider.force_flush, daemon=True)
        flushing.start()
        flushing.join(FLUSH_TIMEOUT_SECONDS)


def _exporter(name: str, environ: Mapping[str, str]) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        # Standard output is the commands' (``--json``): spans go with the log lines.
        return ConsoleSpanExporter(out=sys.stderr)
    if name != "otlp":
        raise TracingUnavailable(
            f"OTEL_TRACES_EXPORTER: unknown exporter {name!r}: use otlp or console"
        )
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    ).strip()
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        elif protocol == "http/protobuf":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
                OTLPSpanExporter,
            )
        else:
            raise TracingUnavailable(
                f"OTEL_EXPORTER_OTLP_PROTOCOL: unknown protocol {protocol!r}: "
                "use grpc or http/protobuf"
            )
    except ImportError:
        raise TracingUnavailable(
            f"OTEL_* asks for the OTLP exporter ({protocol}), which is not installed: {OTEL_EXTRA}"
        ) from None
    return OTLPSpanExporter()
