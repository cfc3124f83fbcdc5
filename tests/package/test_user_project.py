"""A user's project, with the wheel installed into a fresh virtual environment.

The project (``user_project/``, copied to a temporary directory) has Temporal's samples' layout:
its own top-level ``activities.py``, ``workflows.py`` and ``worker.py``, which the one
``toolcalls`` namespace leaves free. Its plain ``Worker`` gets ``ToolCallsPlugin`` beside its
own workflow and activity; its parent makes a call a human approves (with the environment's
``toolcalls approve``) and an inline call; then the parent's exported history replays with
``toolcalls replay --workflow`` and with the snippet of docs/testing.md, and a changed parent
does not.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.package.conftest import ROOT, Installed
from tests.support.inline import viewed
from tests.support.payloads import keys
from tests.worker.support import Done, Spawned, hermetic_env, one_line
from toolcalls import ToolCallClient
from toolcalls.worker.devserver import temporal_binary

PROJECT = Path(__file__).parent / "user_project"
KEYS_ENV = "MYAPP_ATTESTATION_KEYS"
NOTE = "ship it on friday\n"
SNIPPET_START = "# tests/test_replay.py in your project"


def deployment(notes: Path) -> str:
    """The project's ``toolcalls.toml``: the tools its parent calls and its attestation keys."""
    return (
        'tools = ["calculator", "read_file"]\n'
        'state_dir = ".toolcalls/state"\n'
        f"[files]\nroots = [{json.dumps(str(notes))}]\n"
        f'[attestation]\nkeys_env = "{KEYS_ENV}"\n'
    )


def docs_snippet() -> str:
    """The replay test docs/testing.md gives users, as it stands there."""
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    [snippet] = [block for block in blocks if block.startswith(SNIPPET_START)]
    return str(snippet)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "myapp"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "notes").mkdir()
    (root / "notes" / "today.txt").write_text(NOTE, encoding="utf-8")
    (root / "toolcalls.toml").write_text(deployment(root / "notes"), encoding="utf-8")
    (root / "histories").mkdir()
    return root


@pytest.fixture
def user_worker(
    project: Path, installed: Installed, env: WorkflowEnvironment, tmp_path: Path
) -> Iterator[tuple[Spawned, str]]:
    """``python worker.py ADDRESS QUEUE`` in the project, with the environment's interpreter."""
    queue = f"myapp-{uuid.uuid4()}"
    address = env.client.service_client.config.target_host
    worker = Spawned(
        [str(installed.python), "worker.py", address, queue],
        hermetic_env(tmp_path, **{KEYS_ENV: keys("i1")}),
        cwd=project,
    )
    try:
        worker.wait_for_line("worker ready", timeout=60)
        yield worker, queue
    finally:
        worker.kill()


async def run(
    program: str | Path, *args: str, cwd: Path, timeout: float = 60, **extra: str
) -> Done:
    """``program ARGS`` in ``cwd`` to completion, with no Temporal settings from the user."""
    process = await asyncio.create_subprocess_exec(
        str(program),
        *args,
        cwd=cwd,
        env=hermetic_env(cwd, **extra),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{program} {' '.join(args)} still running after {timeout}s") from None
    assert process.returncode is not None
    return Done(process.returncode, out.decode(), err.decode())


async def export(client: Client, workflow_id: str, cwd: Path) -> str:
    """The history, as ``temporal workflow show --output json`` exports it."""
    address = client.service_client.config.target_host
    shown = await run(
        temporal_binary(),
        *("workflow", "show", "-w", workflow_id, "--output", "json"),
        *("--address", address, "--namespace", "default"),
        cwd=cwd,
    )
    assert shown.code == 0, shown.stderr
    return shown.stdout


async def test_a_users_project_serves_approves_and_replays_its_parent(
    project: Path,
    installed: Installed,
    user_worker: tuple[Spawned, str],
    client: Client,
) -> None:
    started = time.monotonic()
    worker, queue = user_worker
    address = client.service_client.config.target_host
    parent_id = f"myapp-parent-{uuid.uuid4()}"
    handle = await client.start_workflow(
        "MyParent",
        str(project / "notes" / "today.txt"),
        id=parent_id,
        task_queue=queue,
        result_type=str,
    )
    # The first call is a child ToolCallWorkflow waiting for a human: approve it from the
    # installed command line, as an operator would.
    calls = ToolCallClient(client, task_queue=queue)
    product = f"{parent_id}/tools/product"
    await viewed(calls, product, lambda state: state.pending_approval is not None)
    approved = await run(
        installed.toolcalls, "approve", product, "--by", "alice", "--address", address, cwd=project
    )
    assert (approved.code, approved.stderr) == (0, ""), approved.stdout
    result = await asyncio.wait_for(handle.result(), 60)
    # The approved child, the inline read (plan and tool in the parent), the user's activity,
    # and the user's workflow ran in the sandbox with the facade imported at module level.
    assert result == "completed 42; completed ship it on friday; sandboxed True"
    history = await handle.fetch_history()
    assert "read_file" in {
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
    }

    exported = await export(client, parent_id, project)
    (project / "histories" / "parent.json").write_text(exported, encoding="utf-8")
    events = len(json.loads(exported)["events"])
    replayed = await run(
        installed.toolcalls,
        *("replay", "--workflow", "workflows:MyParent", "histories/parent.json"),
        *("--config", "toolcalls.toml"),
        cwd=project,
    )
    assert (replayed.code, replayed.stderr) == (0, "")
    ok = f"ok               histories/parent.json ({parent_id}, {events} events)"
    assert replayed.stdout.splitlines() == [ok]

    changed = await run(
        installed.toolcalls,
        *("replay", "--workflow", "workflows_changed:MyParent", "histories/parent.json"),
        cwd=project,
    )
    assert changed.code == 1
    assert changed.stdout.startswith(
        f"nondeterministic histories/parent.json ({parent_id}, {events} events): [TMPRL1100] "
    )
    assert one_line(changed.stderr) == "toolcalls: replay: 1 of 1 histories did not replay"

    unknown = await run(
        installed.toolcalls,
        "replay",
        "--workflow",
        "nosuch:X",
        "histories/parent.json",
        cwd=project,
    )
    assert (unknown.code, unknown.stdout) == (2, "")
    assert one_line(unknown.stderr) == (
        f"toolcalls: replay: --workflow nosuch:X: no module named 'nosuch' in {project} or on "
        "the path"
    )

    # The docs' pytest snippet, as a user's test file, run by the environment's interpreter.
    (project / "test_replay.py").write_text(docs_snippet(), encoding="utf-8")
    snippet = await run(
        installed.python,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_replay.py"),
        cwd=project,
        timeout=120,
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    assert snippet.code == 0, snippet.stdout + snippet.stderr
    assert "1 passed" in snippet.stdout

    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(30) == 0, "".join(worker.stderr)
    assert worker.stdout[-1] == "worker stopped\n"
    print(f"user project: {time.monotonic() - started:.1f}s after the worker was ready")
