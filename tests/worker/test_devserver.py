"""``toolcalls.worker.devserver``: a dev server that cannot start says why, from its own log;
``pid``."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from toolcalls.worker.devserver import DevServer, DevServerError


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


def _cmdline(pid: int) -> list[bytes]:
    """The process's command line, or ``[]`` when no process has that id."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return []


async def test_pid_names_the_running_server_process_and_none_once_stopped(tmp_path: Path) -> None:
    server = DevServer(tmp_path / "temporal.db", port=_free_port(), ui_port=None)
    before = server.pid
    async with server:
        pid = server.pid
        assert pid is not None
        command = _cmdline(pid)
    after = server.pid
    assert b"start-dev" in command
    assert str(server.port).encode() in command
    assert (before, after) == (None, None)
    assert not _cmdline(pid)  # stopped and reaped
