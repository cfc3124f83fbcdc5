"""Real HTTP(S) servers on loopback for the network tests, and a resolver that maps names to them.

Each server runs in its own thread (so a test's event loop is never blocked by it), serves a table
of routes, and records every request and every connection it accepted. The outages are real too:
a port that refuses connections, a listener that resets every connection, one that never takes a
connection at all.
"""

from __future__ import annotations

import functools
import gzip
import ipaddress
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import trustme

from toolcalls.activities.network.guard import Address

Route = Callable[[BaseHTTPRequestHandler], None]


@dataclass(frozen=True)
class Seen:
    """One request a server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class LoopbackServer:
    """A running server; ``routes`` maps a path (without query) to what it answers."""

    routes: dict[str, Route]
    port: int = 0
    scheme: str = "http"
    requests: list[Seen] = field(default_factory=list)
    connections: int = 0

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


def _handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            server.connections += 1
            super().setup()

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            server.requests.append(
                Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            route = server.routes.get(path)
            if route is None:
                text(b"not found", status=404)(self)
                return
            with suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):
                route(self)

        do_GET = do_POST = do_HEAD = do_PUT = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-response (a ceiling reached) is what the tests want


@contextmanager
def serve(
    routes: Mapping[str, Route], tls: ssl.SSLContext | None = None
) -> Iterator[LoopbackServer]:
    """Serve ``routes`` on 127.0.0.1 (HTTPS with ``tls``) for the duration of the block."""
    state = LoopbackServer(routes=dict(routes), scheme="https" if tls else "http")
    httpd = _Server(("127.0.0.1", 0), _handler(state))
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def text(
    body: bytes | str,
    content_type: str = "text/plain; charset=utf-8",
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Route:
    """Answer with a fixed body."""
    data = body.encode() if isinstance(body, str) else body

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(data)

    return route


def redirect(location: str, status: int = 302) -> Route:
    """Answer with a redirect to ``location``."""
    return text(b"", status=status, headers={"Location": location})


def endless(chunk: bytes = b"x" * 65_536) -> Route:
    """A chunked body that never ends (until the client goes away)."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        while True:
            handler.wfile.write(frame)

    return route


def drip(interval: float, byte: bytes = b"x") -> Route:
    """One byte every ``interval`` seconds, forever: each read succeeds, the whole never ends."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", "1000000")
        handler.end_headers()
        for _ in range(1_000_000):
            handler.wfile.write(byte)
            handler.wfile.flush()
            time.sleep(interval)

    return route


@functools.cache
def gzip_of_zeros(size: int) -> bytes:
    """``size`` zero bytes, gzip-compressed (100 MB compresses to about 100 KB)."""
    return gzip.compress(bytes(size), compresslevel=9)


def compressed(body: bytes, content_type: str = "text/plain", encoding: str = "gzip") -> Route:
    """Answer with an already-encoded body under ``Content-Encoding``."""
    return text(body, content_type, headers={"Content-Encoding": encoding})


@dataclass
class MapResolver:
    """A resolver from a fixed table; ``calls`` records every lookup, in order.

    A name may map to a sequence of answers, one per lookup (the last one repeats): DNS rebinding.
    """

    table: Mapping[str, Sequence[str] | Sequence[Sequence[str]]]
    calls: list[str] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> Sequence[Address]:
        answers = self.table.get(host)
        index = self.calls.count(host)
        self.calls.append(host)
        if answers is None:
            return []
        chosen: Sequence[Any] = answers
        if answers and not isinstance(answers[0], str):
            chosen = answers[min(index, len(answers) - 1)]
        return [ipaddress.ip_address(a) for a in chosen]


@dataclass(frozen=True)
class Certificates:
    """A test CA and server contexts for names it signs."""

    ca: trustme.CA

    def server(self, *names: str) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert(*names).configure_cert(context)
        return context

    def client(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context


def certificates() -> Certificates:
    return Certificates(trustme.CA())


@contextmanager
def closed_port(host: str = "127.0.0.1", port: int = 0) -> Iterator[int]:
    """A port that refuses every connection while the block runs (bound, never listening)."""
    with socket.socket() as sock:
        sock.bind((host, port))
        yield sock.getsockname()[1]


@dataclass
class Resetting:
    """A listener that resets every connection it takes; ``received`` holds what arrived first."""

    port: int = 0
    received: list[bytes] = field(default_factory=list)


@contextmanager
def resetting(host: str = "127.0.0.1", port: int = 0) -> Iterator[Resetting]:
    """Accept each connection, read what the client sends first, then answer with a TCP reset."""
    state = Resetting()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(8)
    listener.settimeout(0.05)
    state.port = listener.getsockname()[1]
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                with suppress(OSError):
                    state.received.append(conn.recv(65_536))
                # Linger on, zero timeout: close() sends RST instead of FIN.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@contextmanager
def black_hole() -> Iterator[int]:
    """A port whose listener never takes another connection: a connect hangs, unanswered.

    The accept queue of a ``listen(0)`` socket holds one connection; with it filled, the kernel
    drops every further SYN, as a firewall that drops packets (or a dead host) would.
    """
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            yield port
