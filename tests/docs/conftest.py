"""The settings the snippets run in, and the worker of the example deployment that serves them."""

from __future__ import annotations

import base64
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.docs.blocks import ROOT
from tests.docs.runner import Setting
from tests.worker.support import TOOLCALLS, Spawned, free_port, hermetic_env, kill_marked

EXAMPLE = ROOT / "examples" / "toolcalls.toml"
SCRATCH = "/tmp/toolcalls-scratch"
FIXED_PORTS = ("8081", "8234", "8765", "9464")
"""Ports the pages name for the servers they start (codec, inbox, MCP, metrics)."""


@pytest.fixture(scope="session")
def address(env: WorkflowEnvironment) -> str:
    target: str = env.client.service_client.config.target_host
    return target


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example deployment's scratch folder, one per session instead of ``SCRATCH``."""
    return tmp_path_factory.mktemp("scratch")


def example_config(root: Path, scratch: Path) -> str:
    """The example deployment for a directory: the same file with its own scratch folder, dev
    server ports and data directory, and an inbox on a free port."""
    text = EXAMPLE.read_text(encoding="utf-8")
    for old, new in (
        (SCRATCH, str(scratch)),
        ('data_dir = ".toolcalls"', f'data_dir = "{root / ".toolcalls"}"'),
        ("port = 7233", f"port = {free_port()}"),
        ("ui_port = 8233", f"ui_port = {free_port()}"),
    ):
        assert old in text, f"examples/toolcalls.toml no longer has {old!r}"
        text = text.replace(old, new)
    return text + f'\n[inbox]\nlisten = "127.0.0.1:{free_port()}"\n'


HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$"
    "6Oja2cCv+aRSXM5Sf+xYoQ$g4DYqOvyqxEXeL7U2nspa2HC1S9cM5hM1K5Oyz+HDrw"
)
"""``toolcalls inbox hash-password`` of a password nobody needs: the account only has to exist."""
DEPLOYMENT = f"""
[codec]
keys_env = "TOOLCALLS_KEYS"
[codec.server]
tokens_env = "TOOLCALLS_CODEC_TOKENS"

[[inbox.users]]
name = "alice"
password_hash = "{HASH}"
groups = ["ops"]

[profiles.research]
tools = ["files.*", "calculator"]

[connections]
public_url = "http://127.0.0.1:8234"

[[connections.providers]]
name = "google"
client_id = "docs-example-client"
"""
"""What a docs page's ``toolcalls.toml`` adds to the example deployment: the sections the pages
set up (payload encryption and its codec server, an inbox account, a profile, an OAuth client
for per-principal connections), with their
secrets in the environment (``secrets()``)."""


SECRETS = {
    "TOOLCALLS_KEYS": "k1=" + base64.b64encode(os.urandom(32)).decode(),
    "TOOLCALLS_CODEC_TOKENS": "docs=" + os.urandom(24).hex(),
}
"""The deployment's secrets: one set for the session, so its worker and the pages agree."""
DOCS_QUEUE = "toolcalls-docs"
"""The docs pages' deployment's task queue: its worker encrypts, and a queue of its own keeps it
apart from the example deployment's (no keys), which the README speaks of."""


def secrets() -> dict[str, str]:
    return dict(SECRETS)


def deployment_config(root: Path, scratch: Path) -> str:
    """A docs page's ``toolcalls.toml``: the example deployment, on its own queue, with what the
    pages set up (``DEPLOYMENT``)."""
    queue = 'task_queue = "toolcalls"'
    text = example_config(root, scratch)
    assert queue in text, f"examples/toolcalls.toml no longer has {queue!r}"
    return text.replace(queue, f'task_queue = "{DOCS_QUEUE}"', 1) + DEPLOYMENT


@pytest.fixture(scope="module")
def worker(
    address: str, scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Spawned]:
    """``toolcalls worker --config examples/toolcalls.toml`` on the test server: the worker
    ``make run`` starts, serving every page's calls; stopped after them, so that no later test
    finds a worker on the deployment's default queue."""
    root = tmp_path_factory.mktemp("deployment")
    config = root / "toolcalls.toml"
    config.write_text(example_config(root, scratch), encoding="utf-8")
    spawned = Spawned(
        [TOOLCALLS, "worker", "--config", str(config), "--address", address],
        hermetic_env(root),
        cwd=root,
    )
    try:
        spawned.wait_for_line("polling task queue", timeout=120)
        yield spawned
    finally:
        spawned.kill()
        kill_marked(str(root))


@pytest.fixture(scope="module")
def deployment_worker(
    address: str, scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Spawned]:
    """The docs pages' deployment's worker (``toolcalls.toml``: encryption, an inbox account, a
    profile), serving the calls the pages make with ``--config toolcalls.toml``."""
    root = tmp_path_factory.mktemp("docs-deployment")
    config = root / "toolcalls.toml"
    config.write_text(deployment_config(root, scratch), encoding="utf-8")
    spawned = Spawned(
        [TOOLCALLS, "worker", "--config", str(config), "--address", address],
        hermetic_env(root, **secrets()),
        cwd=root,
    )
    try:
        spawned.wait_for_line("polling task queue", timeout=120)
        yield spawned
    finally:
        spawned.kill()
        kill_marked(str(root))


@pytest.fixture
def setting(
    request: pytest.FixtureRequest, address: str, scratch: Path, tmp_path: Path
) -> Iterator[Setting]:
    """A page's directory: README.md's stands in for the repository, a docs page's for a
    deployment's (its ``toolcalls.toml``)."""
    page: str = request.node.callspec.params["page"]
    root = tmp_path / "here"
    (root / "examples").mkdir(parents=True)
    (root / "examples" / "toolcalls.toml").write_text(
        example_config(root, scratch), encoding="utf-8"
    )
    if page != "README.md":
        deployment = deployment_config(root, scratch)
        (root / "toolcalls.toml").write_text(deployment, encoding="utf-8")
    # The checkout's Makefile and a .venv that is the test's own, installed already.
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, root / name)
    (root / ".venv").mkdir()
    (root / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    (root / ".venv" / ".installed-stamp").touch()
    bin_dir = str(Path(sys.executable).parent)
    env = hermetic_env(
        root,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        PYTHONPATH=str(ROOT),
        TEMPORAL_ADDRESS=address,
        TEMPORAL_NAMESPACE="default",
        **secrets(),
    )
    substitutions = [
        ("localhost:7233", address),
        ("127.0.0.1:7233", address),
        (SCRATCH, str(scratch)),
    ]
    for port in FIXED_PORTS:
        free = str(free_port())
        substitutions += [(f"{host}:{port}", f"{host}:{free}") for host in ("127.0.0.1", "0.0.0.0")]
    try:
        yield Setting(root, env, substitutions)
    finally:
        kill_marked(str(root))
