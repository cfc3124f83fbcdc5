"""Listening sockets for the HTTP fronts, bound before a server starts.

uvicorn binds its own socket and, when the port is taken, logs a traceback and raises
``SystemExit(3)``; a socket bound here first makes a busy port our error instead: one line naming
the front and the address, exit 2.
"""

from __future__ import annotations

import os
import socket

from toolcalls.worker.config import ConfigError


def bind(host: str, port: int, what: str) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` for the front ``what`` (``codec server``).

    Raises:
        ConfigError: the address cannot be listened on (in use, not this host's, unknown name).
    """
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else str(exc)
        raise ConfigError(f"{what}: cannot listen on {listen}: {reason}") from None
