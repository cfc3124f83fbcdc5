"""How the real ``toolcalls`` command ends when something is in its way: a busy port, a closed
pipe, an unknown tool; and ``toolcalls.run_script`` for short client scripts."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.support import TOOLCALLS, hermetic_env, one_line, run, write_config


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def test_codec_server_on_a_busy_port_exits_2_with_one_line(tmp_path: Path, busy_port: int) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"k1={base64.b64encode(os.urandom(32)).decode()}\n", encoding="utf-8")
    config = write_config(
        tmp_path, f'[codec]\nkeys_file = "{keys}"\n[codec.server]\nallow_anonymous = true\n'
    )
    listen = f"127.0.0.1:{busy_port}"
    done = run([TOOLCALLS, "codec-server", "--config", str(config), "--listen", listen], tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert one_line(done.stderr) == (
        f"toolcalls: codec server: cannot listen on {listen}: Address already in use"
    )


def test_mcp_http_on_a_busy_port_exits_2_before_connecting(tmp_path: Path, busy_port: int) -> None:
    listen = f"127.0.0.1:{busy_port}"
    # Nothing listens at the Temporal address: the port is refused before any connection.
    done = run(
        [TOOLCALLS, "mcp", "--http", listen, "--address", "127.0.0.1:1"],
        tmp_path,
        TOOLCALLS_MCP_TOKEN="a-token-long-enough-for-mcp",
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        one_line(done.stderr)
        == f"toolcalls: mcp: cannot listen on {listen}: Address already in use"
    )


@pytest.mark.parametrize("args", [("tools", "--format", "openai"), ("tools", "--json")])
def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    # `toolcalls tools | head -1` once head has gone: a pipe nobody reads any more.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [TOOLCALLS, *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=hermetic_env(tmp_path),
            cwd=tmp_path,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (1, "")


def test_an_unknown_tool_is_refused_from_the_configuration_before_connecting(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, 'tools = ["calculator", "current_datetime"]\n')
    # 127.0.0.1:1 refuses connections: a command that tried to connect would say so instead.
    done = run(
        [TOOLCALLS, "call", "calculater", '{"expression": "1"}', "--address", "127.0.0.1:1"],
        tmp_path,
        TOOLCALLS_CONFIG=str(config),
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert one_line(done.stderr) == (
        f"toolcalls: call: no tool 'calculater' in {config}; did you mean 'calculator'? "
        "(its tools: calculator, current_datetime)"
    )


def test_a_tool_the_configuration_does_not_enable_is_refused_without_a_guess(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, 'tools = ["calculator"]\n')
    done = run(
        [TOOLCALLS, "call", "read_file", '{"path": "/etc/hostname"}', "--config", str(config)],
        tmp_path,
        TEMPORAL_ADDRESS="127.0.0.1:1",
    )
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        f"toolcalls: call: no tool 'read_file' in {config} (its tools: calculator)"
    )


SCRIPT = """\
import asyncio, sys

from temporalio.client import Client

import toolcalls


async def main() -> int:
    client = await Client.connect({address!r})
    print("connected to", client.namespace, end="")  # no newline: only a flush prints it
    {ending}


toolcalls.run_script(main)
print("never reached")
"""


@pytest.mark.parametrize(
    ("ending", "code", "stderr"),
    [
        ("return 3", 3, ""),
        ("return None", 0, ""),
        ("raise SystemExit('no luck')", 1, "no luck\n"),
        ("raise LookupError('gone')", 1, "LookupError: gone\n"),
    ],
)
def test_run_script_flushes_and_leaves_with_the_scripts_status(
    tmp_path: Path, address: str, ending: str, code: int, stderr: str
) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        SCRIPT.format(address=address, ending=ending),
        encoding="utf-8",
    )
    done = run([sys.executable, str(script)], tmp_path, timeout=60)
    assert done.returncode == code, done.stderr
    assert done.stdout == "connected to default"
    assert done.stderr.endswith(stderr)
    if code == 1 and "LookupError" in stderr:
        assert done.stderr.startswith("Traceback (most recent call last):")
