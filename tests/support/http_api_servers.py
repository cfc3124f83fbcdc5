"""A recording HTTP API on loopback for the ``[[http]]`` tool tests: every method, every request.

The server runs in its own thread; each request is recorded exactly as it arrived (method, raw
target with its query, headers, body) before the route answers, so a test can assert both what
reached the service and that nothing did.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext

T = TypeVar("T")

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Arrived:
    """One request as the service saw it."""

    method: str
    target: str
    """The raw request target: path and query, still percent-encoded."""
    headers: dict[str, str]
    """Lowercase names."""
    body: bytes


@dataclass(frozen=True)
class Reply:
    """A fixed answer; ``delay`` waits before the status line (a slow service)."""

    status: int = 200
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


Route = Reply | Callable[[Arrived], Reply]


@dataclass
class RecordingAPI:
    """A running service: ``routes`` maps a path (no query) to its answer; 404 otherwise."""

    routes: dict[str, Route]
    port: int = 0
    requests: list[Arrived] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _handler(api: RecordingAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def handle(self) -> None:
            # The client may give up mid-exchange (a timeout, a body over its limit).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            arrived = Arrived(
                method=self.command,
                target=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self.rfile.read(length) if length else b"",
            )
            api.requests.append(arrived)
            route = api.routes.get(self.path.split("?", 1)[0])
            if route is None:
                reply = Reply(status=404, body=b'{"error":"not found"}')
            else:
                reply = route(arrived) if callable(route) else route
            if reply.delay:
                time.sleep(reply.delay)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(reply.status)
                if reply.content_type is not None:
                    self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    for method in METHODS:
        setattr(Handler, f"do_{method}", Handler._serve)
    return Handler


@contextmanager
def recording_api(routes: Mapping[str, Route] | None = None) -> Iterator[RecordingAPI]:
    """Serve ``routes`` on 127.0.0.1 for the duration of the block."""
    api = RecordingAPI(routes=dict(routes or {}))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    httpd.daemon_threads = True
    httpd.block_on_close = False
    api.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield api
    finally:
        httpd.shutdown()
        httpd.server_close()


def call_context(
    call_id: str = "toolu_http", precondition: dict[str, Any] | None = None
) -> CallContext:
    """The context the runtime gives a call of workflow ``wf-http``."""
    return CallContext(
        workflow_id="wf-http",
        call_id=call_id,
        idempotency_key=f"wf-http:{call_id}",
        approval=None,
        precondition=precondition,
    )


async def run_tool(
    method: Callable[[Any, CallContext], Awaitable[T]], args: Any, context: CallContext
) -> T:
    """Run a family method as the worker does: inside an activity (heartbeats need one)."""
    result: T = await ActivityEnvironment().run(method, args, context)
    return result
