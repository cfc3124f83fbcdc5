"""``worker.devserver``: a dev server that cannot start says why, from its own log."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from worker.devserver import DevServer, DevServerError


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_a_server_that_exits_at_start_names_the_reason_and_its_log(tmp_path: Path) -> None:
    unopenable = tmp_path / "a-directory"
    unopenable.mkdir()  # SQLite cannot open a directory as its database file
    log_file = tmp_path / "dev.log"
    server = DevServer(unopenable, port=_free_port(), ui_port=None, log_file=log_file)
    server.start()
    try:
        with pytest.raises(DevServerError) as raised:
            await server.wait_ready(timeout=60)
    finally:
        server.stop()
    message = str(raised.value)
    assert message.startswith("the dev server exited with code 1: ")
    assert "unable to open database file" in message
    assert message.endswith(f"; see {log_file}")
