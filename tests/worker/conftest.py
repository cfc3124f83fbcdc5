"""Fixtures for the worker and command-line tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.worker.support import TOOLCALLS, Spawn, Spawned, hermetic_env, kill_marked


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """Start commands in their own process groups; kill whatever is left in teardown.

    The dev server a command starts runs in a session of its own, so it is found by the test's
    unique tmp path on its command line (its database file lives there).
    """
    started: list[Spawned] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Spawned:
        spawned = Spawned([TOOLCALLS, *args], env or hermetic_env(tmp_path), cwd=tmp_path)
        started.append(spawned)
        return spawned

    yield start
    for spawned in started:
        spawned.kill()
    kill_marked(str(tmp_path))


@pytest.fixture
def address(env: WorkflowEnvironment) -> str:
    """The session dev server's address, for ``toolcalls --address``."""
    target: str = env.client.service_client.config.target_host
    return target
