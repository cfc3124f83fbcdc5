"""Real processes for the worker tests: free ports, spawned commands, and cleanup by marker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOOLCALLS = str(Path(sys.executable).with_name("toolcalls"))
"""The installed console script, beside the interpreter running the tests."""


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int, ip: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((ip, port)) == 0


def wait_port_closed(port: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not port_open(port):
            return True
        time.sleep(0.1)
    return False


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without Temporal or toolcalls settings, plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TEMPORAL_") and key != "TOOLCALLS_CONFIG"
    }
    env.update(extra)
    return env


def pids_with(marker: str) -> list[int]:
    """Processes whose command line mentions ``marker`` (a test's unique tmp path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def kill_marked(marker: str) -> None:
    """Kill the process groups of every process started for one test (found by ``marker``)."""
    own_group = os.getpgid(0)
    for pid in pids_with(marker):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group != own_group:
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class Spawned:
    """A command in its own process group, its output collected line by line."""

    def __init__(
        self, args: Sequence[str], env: Mapping[str, str], cwd: Path | None = None
    ) -> None:
        self.args = list(args)
        self.process = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[tuple[str, str]] = queue.Queue()
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(name, stream, sink), daemon=True)
            for name, stream, sink in (
                ("stdout", self.process.stdout, self.stdout),
                ("stderr", self.process.stderr, self.stderr),
            )
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str, stream: object, sink: list[str]) -> None:
        assert hasattr(stream, "readline")
        for line in iter(stream.readline, ""):
            sink.append(line)
            self.lines.put((name, line))

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_for_line(self, text: str, timeout: float = 60) -> str:
        """The first output line containing ``text``; fail if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                _, line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    self.finish(5)
                    raise AssertionError(
                        f"{self.args} exited with {self.process.returncode} before printing "
                        f"{text!r}; stderr: {''.join(self.stderr)[-2000:]}"
                    ) from None
                continue
            if text in line:
                return line
        raise AssertionError(f"{text!r} not printed within {timeout}s: {''.join(self.stderr)}")

    def finish(self, timeout: float) -> int:
        """Wait for the exit and for all output to be read."""
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(5)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        for reader in self._readers:
            reader.join(5)


Spawn = Callable[..., Spawned]
"""The ``spawn`` fixture: start ``toolcalls`` with arguments (and optionally ``env=``)."""


def hermetic_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No Temporal settings from the user running the tests, and no real profile file."""
    return clean_env(TEMPORAL_CONFIG_FILE=str(tmp_path / "no-temporal.toml"), **extra)


def run(
    args: Sequence[str], tmp_path: Path, timeout: float = 30, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args),
        env=hermetic_env(tmp_path, **extra),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass(frozen=True)
class Done:
    """A finished command: exit status and everything it printed."""

    code: int
    stdout: str
    stderr: str


async def toolcalls(
    tmp_path: Path,
    *args: str,
    timeout: float = 60,
    env: Mapping[str, str] | None = None,
    on_line: Callable[[str], None] | None = None,
) -> Done:
    """Run ``toolcalls ARGS`` to completion without blocking the event loop.

    An in-process worker runs on the test's event loop, so a blocking ``subprocess.run`` would
    starve it while the command waits for the worker. ``on_line`` is called with each line of
    standard output as the command prints it.
    """
    process = await asyncio.create_subprocess_exec(
        TOOLCALLS,
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else hermetic_env(tmp_path),
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        if on_line is None:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        else:
            out, err = await asyncio.wait_for(_read_lines(process, on_line), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        raise AssertionError(f"toolcalls {' '.join(args)} still running after {timeout}s") from None
    assert process.returncode is not None
    return Done(process.returncode, out.decode(), err.decode())


async def _read_lines(
    process: asyncio.subprocess.Process, on_line: Callable[[str], None]
) -> tuple[bytes, bytes]:
    assert process.stdout is not None
    assert process.stderr is not None
    stdout = process.stdout

    async def lines() -> bytes:
        out = bytearray()
        async for line in stdout:
            out += line
            on_line(line.decode().rstrip("\n"))
        return bytes(out)

    out, err = await asyncio.gather(lines(), process.stderr.read())
    await process.wait()
    return out, err


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def write_config(tmp_path: Path, text: str, name: str = "toolcalls.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


async def command(tmp_path: Path, address: str, *args: str, timeout: float = 60) -> Done:
    """``toolcalls ARGS --address <the session's dev server>``."""
    return await toolcalls(tmp_path, *args, "--address", address, timeout=timeout)


async def pending_entry(
    tmp_path: Path, address: str, workflow_id: str, timeout: float = 20, *more: str
) -> dict[str, Any]:
    """Poll ``toolcalls pending --json [MORE]`` (visibility is eventually consistent) for one
    call."""
    deadline = time.monotonic() + timeout
    while True:
        done = await command(tmp_path, address, "pending", "--json", *more)
        assert done.code == 0, done.stderr
        listed = json.loads(done.stdout)["calls"]
        found = [call for call in listed if call["workflow_id"] == workflow_id]
        if found:
            entry: dict[str, Any] = found[0]
            return entry
        assert time.monotonic() < deadline, f"pending never listed {workflow_id}"
        await asyncio.sleep(0.2)


async def pending_row(tmp_path: Path, address: str, workflow_id: str) -> list[str]:
    """The cells of a call's row in the text ``pending`` table."""
    done = await command(tmp_path, address, "pending")
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split("  ")[0] == "WORKFLOW ID"
    [row] = [line for line in lines if line.startswith(workflow_id + " ")]
    return re.split(r"\s{2,}", row)


def field(text: str, label: str) -> str:
    """The value of a ``label: value`` line of a command's text output."""
    match = re.search(rf"^{label}:\s+(.*)$", text, re.MULTILINE)
    assert match, f"no {label!r} line in:\n{text}"
    return match.group(1)
