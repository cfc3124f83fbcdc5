"""The ``[telemetry]`` section and ``log_format``: where metrics and health are served, how logs
look. Traces need no key: the standard ``OTEL_*`` variables configure them (``tracing``)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_PROMETHEUS = "127.0.0.1:9464"
"""The port OpenTelemetry's Prometheus exporter uses by convention."""
DEFAULT_SERVICE_NAME = "toolcalls"
MAX_SERVICE_NAME = 100


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class TelemetrySection(BaseModel):
    """Metrics and health of a worker process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prometheus: str | None = None
    """``HOST:PORT`` serving ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``; none by
    default. ``toolcalls worker --metrics HOST:PORT`` beats it."""
    service_name: str = Field(
        default=DEFAULT_SERVICE_NAME, min_length=1, max_length=MAX_SERVICE_NAME
    )
    """The ``service_name`` label on every metric (the SDK's runtime metrics included)."""

    @field_validator("prometheus")
    @classmethod
    def _prometheus(cls, listen: str | None) -> str | None:
        if listen is not None:
            split_address(listen)
        return listen


def split_address(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9464`` for IPv6) as a host and a port.

    Raises:
        ValueError: not of that form.
    """
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{listen!r} is not HOST:PORT")
    return host.strip("[]"), int(port)
