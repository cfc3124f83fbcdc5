"""``toolcalls inbox`` and ``toolcalls inbox hash-password`` as real processes, and the inbox
served beside ``toolcalls worker --dev --inbox`` with its dev login."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher

from tests.worker.inbox.support import fast_hash, forms
from tests.worker.support import (
    TOOLCALLS,
    Spawn,
    free_port,
    hermetic_env,
    one_line,
    pids_with,
    toolcalls,
    wait_port_closed,
    write_config,
)
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.worker.inbox.auth import Passwords
from toolcalls.worker.inbox.serve import plan


def hash_password(tmp_path: Path, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TOOLCALLS, "inbox", "hash-password"],
        input=stdin,
        env=hermetic_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_hash_password_reads_standard_input(tmp_path: Path) -> None:
    done = hash_password(tmp_path, "correct horse battery staple\n")
    assert done.returncode == 0, done.stderr
    hashed = done.stdout.strip()
    assert hashed.startswith("$argon2id$")
    # One trailing newline ends the line; everything else is the password.
    assert PasswordHasher().verify(hashed, "correct horse battery staple")
    empty = hash_password(tmp_path, "\n")
    assert empty.returncode == 2
    assert one_line(empty.stderr) == "toolcalls: inbox hash-password: the password is empty"


def test_the_inbox_refuses_to_start_when_nobody_can_log_in(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[inbox]\nlisten = "127.0.0.1:1"\n')
    done = subprocess.run(
        [TOOLCALLS, "inbox", "--config", str(config), "--address", "127.0.0.1:1"],
        env=hermetic_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        "toolcalls: inbox: nobody can log in: add [[inbox.users]] with a password_hash "
        "(toolcalls inbox hash-password), or set proxy_header and trusted_proxies"
    )


async def test_worker_dev_inbox_prints_its_url_and_a_dev_login(
    tmp_path: Path, spawn: Spawn
) -> None:
    port, inbox_port = free_port(), free_port()
    data_dir = tmp_path / "data"
    config = write_config(
        tmp_path,
        f'task_queue = "inbox-{uuid.uuid4()}"\ntools = ["calculator"]\n'
        "[worker]\ngraceful_shutdown_seconds = 5\n"
        f'[dev]\ndata_dir = "{data_dir}"\nport = {port}\nheadless = true\n'
        f'[inbox]\nlisten = "127.0.0.1:{inbox_port}"\n',
    )
    worker = spawn("worker", "--dev", "--inbox", "--config", str(config))
    line = await asyncio.to_thread(worker.wait_for_line, "inbox at", 60)
    for _ in range(600):  # the worker logs this on stderr, before or after
        if "polling task queue" in "".join(worker.stderr):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the worker never polled: {''.join(worker.stderr)}")
    match = re.fullmatch(
        rf"inbox at http://127\.0\.0\.1:{inbox_port}; dev login: dev / (\S+) "
        r"\(made for this run only\)\n",
        line,
    )
    assert match, line
    origin = f"http://127.0.0.1:{inbox_port}"
    async with httpx.AsyncClient(base_url=origin, timeout=30) as browser:
        page = await browser.get("/login")
        token = forms(page.text)[-1].fields["csrf"]
        login = await browser.post(
            "/login", data={"username": "dev", "password": match.group(1), "csrf": token}
        )
        assert login.status_code == 303
        listing = await browser.get("/")
        assert listing.status_code == 200
        assert "Waiting for a decision or an answer" in listing.text
    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(30) == 0
    assert wait_port_closed(inbox_port)
    assert wait_port_closed(port)
    assert pids_with(str(data_dir)) == []


def test_the_dev_login_is_made_only_in_dev_on_loopback_without_accounts() -> None:
    made = plan(parse_config({}), {}, dev=True)
    assert made.dev_password is not None
    [dev] = made.section.users
    assert dev.name == "dev"
    assert Passwords().check(dev, made.dev_password)
    assert made.announcement().startswith("inbox at http://127.0.0.1:8234; dev login: dev / ")
    with pytest.raises(ConfigError, match="the dev login is made only on a loopback address"):
        plan(parse_config({}), {}, dev=True, listen="0.0.0.0:8234")
    with pytest.raises(ConfigError, match="nobody can log in"):
        plan(parse_config({}), {}, dev=False)
    listed = parse_config(
        {"inbox": {"users": [{"name": "alice", "password_hash": fast_hash("x")}]}}
    )
    kept = plan(listed, {}, dev=True)
    assert kept.dev_password is None
    assert [user.name for user in kept.section.users] == ["alice"]
    proxied = parse_config(
        {"inbox": {"proxy_header": "X-Forwarded-User", "trusted_proxies": ["10.0.0.1"]}}
    )
    assert plan(proxied, {}, dev=True).section.users == []


def test_worker_inbox_without_dev_needs_accounts(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'tools = ["calculator"]\n')
    done = subprocess.run(
        [TOOLCALLS, "worker", "--inbox", "--config", str(config), "--address", "127.0.0.1:1"],
        env=hermetic_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "toolcalls: inbox: nobody can log in" in done.stderr


async def test_a_worker_whose_inbox_cannot_listen_stops_with_the_reason(
    tmp_path: Path, address: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = write_config(
            tmp_path,
            f'task_queue = "inbox-{uuid.uuid4()}"\ntools = ["calculator"]\n'
            f'[inbox]\nlisten = "127.0.0.1:{port}"\n'
            f'[[inbox.users]]\nname = "alice"\npassword_hash = "{fast_hash("pw")}"\n',
        )
        done = await toolcalls(
            tmp_path, "worker", "--inbox", "--config", str(config), "--address", address
        )
    assert done.code == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"toolcalls: inbox: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
