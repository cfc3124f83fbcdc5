"""A deployment with encryption: its configuration file, its keys, and a worker for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.payloads import keys
from tests.worker.support import Done, hermetic_env, toolcalls, write_config
from toolcalls.worker.config import load_config
from toolcalls.worker.run import build_worker

KEYS_ENV = "TOOLCALLS_TEST_KEYS"

Deployment = Callable[..., "Deployed"]


class Deployed:
    """One configuration file, and how to run ``toolcalls`` and a worker with it."""

    def __init__(self, tmp_path: Path, address: str, config: Path) -> None:
        self.tmp_path = tmp_path
        self.address = address
        self.config = config
        self.docs = tmp_path / "docs"

    async def run(
        self,
        *args: str,
        key_ids: tuple[str, ...] = ("k1",),
        timeout: float = 60,
        env: Mapping[str, str] | None = None,
    ) -> Done:
        """``toolcalls ARGS --config FILE --address ADDRESS`` with the keys of ``key_ids`` (and
        ``env`` over them)."""
        environ = hermetic_env(self.tmp_path, **{KEYS_ENV: keys(*key_ids)} if key_ids else {})
        environ.update(env or {})
        extra = ("--address", self.address) if args[0] != "replay" else ()
        return await toolcalls(
            self.tmp_path, *args, "--config", str(self.config), *extra, env=environ, timeout=timeout
        )

    @asynccontextmanager
    async def worker(
        self, client: Client, monkeypatch: pytest.MonkeyPatch, key_ids: tuple[str, ...] = ("k1",)
    ) -> AsyncIterator[None]:
        """An in-process worker for the file, holding the keys of ``key_ids``."""
        with monkeypatch.context() as patched:
            patched.setenv(KEYS_ENV, keys(*key_ids))
            worker = build_worker(client, load_config(self.config))
        async with worker:
            yield


@pytest.fixture
def deployment(tmp_path: Path, address: str, task_queue: str) -> Deployment:
    """``deployment(extra_toml)``: a file serving ``read_file`` and ``calculator`` with the codec
    on (keys in ``$TOOLCALLS_TEST_KEYS``), plus ``extra_toml``."""

    def make(extra: str = "", **sections: Any) -> Deployed:
        docs = tmp_path / "docs"
        docs.mkdir(exist_ok=True)
        text = f"""
task_queue = "{task_queue}"
tools = ["calculator", "read_file", "read_document"]
state_dir = "{tmp_path / "state"}"
[worker]
isolate_workflows = true
[files]
roots = ["{docs}"]
[documents]
roots = ["{docs}"]
[codec]
keys_env = "{KEYS_ENV}"
{extra}
"""
        return Deployed(tmp_path, address, write_config(tmp_path, text))

    return make
