"""The worker's metrics and health listener: ``/metrics``, ``/healthz`` and ``/readyz``.

The SDK's own Prometheus exporter (``temporalio.runtime.PrometheusConfig``) serves ``/metrics``
and nothing else: it has no way to add a path. So that Kubernetes probes and Prometheus share one
port, the SDK's exporter listens on a loopback port of its own chosen at start, and this listener,
on the configured ``HOST:PORT``, answers the probes itself and forwards ``/metrics`` to it. The
exposition is the SDK's, its runtime metrics (``temporal_*``) and ours (``toolcalls_*``, recorded
through the SDK's workflow and activity meters), with one correction: the SDK's exporter appends
``_total`` to every counter's name, also to a counter already named so
(``temporal_local_activity_total`` would be ``..._total_total``), and the listener drops the second.

``/healthz`` answers 200 while the process runs. ``/readyz`` answers 200 once the worker polls
and the Temporal frontend answers its health check, 503 before that, while shutting down and when
the server cannot be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
from datetime import timedelta

from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime
from temporalio.worker import Worker

from toolcalls.activities.telemetry import TOOL_DURATION, TOOL_DURATION_BUCKETS
from toolcalls.worker.telemetry.runtime import worker_runtime
from toolcalls.worker.telemetry.settings import TelemetrySection
from toolcalls.workflows.call.telemetry import APPROVAL_WAIT, APPROVAL_WAIT_BUCKETS

log = logging.getLogger("toolcalls.telemetry")

BIND_ATTEMPTS = 5
"""Tries at the SDK exporter's loopback port: another process may take a free port first."""
HEALTH_CHECK_TIMEOUT = timedelta(seconds=2)
REQUEST_TIMEOUT = 10.0
"""Seconds a client of the listener has to send its request line and headers."""
MAX_HEADER_LINES = 100
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = {APPROVAL_WAIT: APPROVAL_WAIT_BUCKETS, TOOL_DURATION: TOOL_DURATION_BUCKETS}
_DOUBLE_TOTAL = re.compile(
    rb"^(# (?:HELP|TYPE) )?([a-zA-Z_:][a-zA-Z0-9_:]*)_total_total(?=[ {])", re.M
)
"""A metric name in an exposition's comment or sample line, with the suffix twice."""


def metrics_runtime(section: TelemetrySection) -> tuple[Runtime, int]:
    """A Temporal runtime whose metrics the SDK serves on a loopback port; the port.

    Counters end in ``_total`` and durations are in seconds, as Prometheus names them; every
    metric carries ``service_name``, and core's log lines go to Python's logging
    (``worker_runtime``).

    Raises:
        OSError: no loopback port could be bound.
    """
    for attempt in range(BIND_ATTEMPTS):
        port = _free_port()
        config = PrometheusConfig(
            bind_address=f"127.0.0.1:{port}",
            counters_total_suffix=True,
            durations_as_seconds=True,
            histogram_bucket_overrides={name: list(b) for name, b in BUCKETS.items()},
        )
        try:
            return worker_runtime(section, config), port
        except ValueError as exc:  # the port was taken between the check and the bind
            if attempt == BIND_ATTEMPTS - 1:
                raise OSError(f"cannot serve the SDK's metrics on loopback: {exc}") from None
    raise AssertionError("unreachable")


class Health:
    """What ``/readyz`` reports: whether the worker polls and its server answers."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._worker: Worker | None = None

    def polling(self, client: Client, worker: Worker) -> None:
        """The worker has started polling through ``client``."""
        self._client, self._worker = client, worker

    def stopping(self) -> None:
        """The worker is shutting down: no longer ready for new work."""
        self._worker = None

    async def ready(self) -> tuple[bool, str]:
        """Ready or not, and why."""
        worker, client = self._worker, self._client
        if worker is None or client is None:
            return False, "the worker is not polling"
        if not worker.is_running:
            return False, "the worker has stopped"
        try:
            serving = await client.service_client.check_health(timeout=HEALTH_CHECK_TIMEOUT)
        except Exception as exc:  # any failure to reach the server means not ready
            return False, f"temporal is unreachable: {type(exc).__name__}"
        return (True, "ok") if serving else (False, "temporal is not serving")


class MetricsEndpoint:
    """The listener on ``host:port``; ``metrics_port`` is the SDK exporter's loopback port."""

    def __init__(self, host: str, port: int, metrics_port: int, health: Health) -> None:
        self.host, self.port = host, port
        self.metrics_port = metrics_port
        self.health = health
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> MetricsEndpoint:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, path = await asyncio.wait_for(_request(reader), REQUEST_TIMEOUT)
            status, content_type, body = await self._answer(method, path)
        except (TimeoutError, ValueError, ConnectionError, asyncio.IncompleteReadError):
            status, content_type, body = 400, "text/plain", b"bad request\n"
            method = "GET"
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError):
            writer.write(head.encode() + (b"" if method == "HEAD" else body))
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    async def _answer(self, method: str, path: str) -> tuple[int, str, bytes]:
        path = path.split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"method not allowed\n"
        if path == "/healthz":
            return 200, "text/plain", b"ok\n"
        if path == "/readyz":
            ready, why = await self.health.ready()
            return (200 if ready else 503), "text/plain", f"{why}\n".encode()
        if path == "/metrics":
            try:
                body = await asyncio.wait_for(_scrape(self.metrics_port), REQUEST_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as exc:
                log.warning("cannot read the SDK's metrics on port %s: %s", self.metrics_port, exc)
                return 502, "text/plain", b"metrics unavailable\n"
            return 200, PROMETHEUS_TEXT, single_total(body)
        return 404, "text/plain", b"not found: /metrics, /healthz, /readyz\n"


async def _request(reader: asyncio.StreamReader) -> tuple[str, str]:
    """The method and path of a request, once its headers have been read."""
    line = (await reader.readline()).decode("latin-1").split()
    if len(line) != 3 or not line[2].startswith("HTTP/"):
        raise ValueError("not an HTTP request line")
    for _ in range(MAX_HEADER_LINES):
        if (await reader.readline()) in (b"\r\n", b"\n", b""):
            return line[0], line[1]
    raise ValueError("too many header lines")


async def _scrape(port: int) -> bytes:
    """The SDK exporter's ``/metrics`` body (HTTP/1.0: it closes the connection when done)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    head, _, body = response.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.") or head.split(b" ", 2)[1:2] != [b"200"]:
        raise ValueError(f"unexpected answer {head[:40]!r}")
    return body


def single_total(exposition: bytes) -> bytes:
    """``exposition`` with every ``*_total_total`` metric name ending in one ``_total``."""
    return _DOUBLE_TOTAL.sub(rb"\1\2_total", exposition)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    502: "Bad Gateway",
    503: "Service Unavailable",
}
