"""``toolcalls.worker.devserver``: a dev server that cannot start says why, from its own log;
``pid``; its web UI decodes payloads through the configured codec server."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from tests.worker.support import Spawn, free_port, hermetic_env, write_config
from toolcalls.worker.devserver import DevServer, DevServerError
from toolcalls.worker.payloads.settings import CodecSection


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


async def test_the_file_keeps_a_write_ahead_log_and_a_killed_server_loses_no_commit(
    tmp_path: Path,
) -> None:
    db_file, port = tmp_path / "temporal.db", _free_port()
    server = DevServer(db_file, port=port, ui_port=None)
    async with server:
        client = await Client.connect(server.address)
        await client.start_workflow("NobodyRunsThis", id="kept", task_queue="nobody-polls-this")
        with contextlib.closing(sqlite3.connect(db_file)) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # no shutdown, no checkpoint: the commit is in the log
        while _cmdline(pid) and b"start-dev" in _cmdline(pid):
            await asyncio.sleep(0.05)
    assert await asyncio.to_thread(Path(f"{db_file}-wal").exists)
    async with DevServer(db_file, port=port, ui_port=None) as again:
        client = await Client.connect(again.address)
        description = await client.get_workflow_handle("kept").describe()
    assert description.status is WorkflowExecutionStatus.RUNNING


@pytest.mark.parametrize(
    ("listen", "url"),
    [
        ("127.0.0.1:8081", "http://127.0.0.1:8081"),
        ("0.0.0.0:9000", "http://127.0.0.1:9000"),
        ("[::]:9000", "http://[::1]:9000"),
        ("[::1]:9000", "http://[::1]:9000"),
        ("codec.internal:443", "http://codec.internal:443"),
    ],
)
def test_the_codec_servers_url_is_where_a_browser_here_reaches_it(listen: str, url: str) -> None:
    server = {"listen": listen, "tokens_env": "CODEC_TOKENS"}
    assert CodecSection(keys_env="KEYS", server=server).server_url == url


def test_without_keys_or_a_codec_server_there_is_no_url() -> None:
    assert CodecSection().server_url is None
    assert CodecSection(keys_env="KEYS").server_url is None


def test_the_ui_gets_the_codec_endpoint_only_when_there_is_a_ui(tmp_path: Path) -> None:
    endpoint = "http://127.0.0.1:8081"
    with_ui = DevServer(tmp_path / "t.db", ui_port=8233, ui_codec_endpoint=endpoint).command()
    flag = with_ui.index("--ui-codec-endpoint")
    assert with_ui[flag + 1] == endpoint
    headless = DevServer(tmp_path / "t.db", ui_port=None, ui_codec_endpoint=endpoint).command()
    assert "--ui-codec-endpoint" not in headless
    assert "--ui-codec-endpoint" not in DevServer(tmp_path / "t.db").command()


async def test_worker_dev_points_the_ui_at_the_configured_codec_server(
    tmp_path: Path, spawn: Spawn
) -> None:
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    config = write_config(
        tmp_path,
        'tools = ["calculator"]\n'
        "[worker]\ngraceful_shutdown_seconds = 1\n"
        '[codec]\nkeys_env = "TOOLCALLS_KEYS"\n'
        f'[codec.server]\nlisten = "0.0.0.0:{codec_port}"\nallow_anonymous = false\n'
        'tokens_env = "CODEC_TOKENS"\n'
        f'[dev]\ndata_dir = "{tmp_path / "data"}"\nport = {port}\nui_port = {ui_port}\n',
    )
    key = base64.b64encode(os.urandom(32)).decode()
    env = hermetic_env(tmp_path, TOOLCALLS_KEYS=f"k1={key}")
    worker = spawn("worker", "--dev", "--config", str(config), env=env)
    worker.wait_for_line("polling task queue", timeout=60)
    settings = await ui_settings(ui_port)
    # The UI decodes through the codec server: a browser on this host reaches it on loopback.
    assert settings["Codec"]["Endpoint"] == f"http://127.0.0.1:{codec_port}"
    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(30) == 0


async def ui_settings(ui_port: int, timeout: float = 30) -> dict[str, Any]:
    """The web UI's settings, once it answers (it starts beside the server)."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
        while True:
            try:
                response = await http.get(f"http://127.0.0.1:{ui_port}/api/v1/settings")
                if response.status_code == 200:
                    settings: dict[str, Any] = response.json()
                    return settings
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the web UI never answered"
            await asyncio.sleep(0.2)
