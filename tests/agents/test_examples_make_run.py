"""The agent examples run against `make run`, as their docstrings and docs/agents.md say.

The deployment is what `make run` starts, `toolcalls worker --dev --inbox --config
examples/toolcalls.toml`, as a subprocess in a folder of its own: the example file with its own
scratch folder, data directory and free ports, so that a developer's `make run` or another test run
is never in the way. Each example runs as a user runs it, `python examples/agents/NAME.py` from the
repository's root with `TEMPORAL_ADDRESS` naming that dev server (and, for this deployment's
scratch folder, `TOOLCALLS_CONFIG` naming its file and `--folder` the folder): with `--approve-as`
it approves its own call; without, it prints the `toolcalls approve` command, which a person runs,
and then it finishes.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.worker.support import TOOLCALLS, Spawned, free_port, hermetic_env, kill_marked

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "toolcalls.toml"
MAKE_RUN = "$(BIN)/toolcalls worker --dev --inbox --config $(CONFIG)"
"""The Makefile's `run` recipe, which this test starts (checked below, so they stay one)."""
READY = ("polling task queue", "inbox at ")
"""What the worker prints once it serves calls and the inbox."""
APPROVE = re.compile(r"toolcalls approve (?P<call>\S+) --by (?P<name>\S+)")
TIMEOUT = 180
"""Seconds an example may take: a worker's start, a model turn, a call, another turn."""


@dataclass(frozen=True)
class MakeRun:
    address: str
    scratch: Path
    root: Path
    config: Path


@dataclass(frozen=True)
class Example:
    """What one example writes, and what its answer says."""

    name: str
    note: str
    """The glob of the file it creates in the scratch folder."""
    content: str
    answer: Callable[[Path], str]
    """The start of its last line, given the file it wrote."""
    waiting: str
    """The line that tells a person what to run, for the call ``{call}``."""
    call: str
    """How the call's id ends: the agent's workflow id, then the model's tool-call id."""


EXAMPLES = [
    Example(
        "pydantic_ai",
        "agent-*.txt",
        "written by a pydantic-ai agent, approved by a person\n",
        lambda note: "create_file said: {",
        "waiting for a person: toolcalls approve {call} --by NAME",
        "/tools/create-1",
    ),
    Example(
        "openai_agents",
        "agent-note-*.txt",
        "Buy milk.\n",
        lambda note: "I saved your note. The tool said: {",
        "the agent waits for an approval: toolcalls approve {call} --by YOUR_NAME",
        "/tools/call_1",
    ),
    Example(
        "langgraph",
        "langgraph-*.txt",
        "written by a LangGraph agent\n",
        lambda note: f"I asked to write {note}; the tool said: {{",
        "waiting for an approval: toolcalls approve {call} --by NAME",
        "/tools/write-note",
    ),
]


def deployment(root: Path, scratch: Path) -> tuple[str, int]:
    """examples/toolcalls.toml for ``root``: its scratch folder, data directory and ports."""
    text = EXAMPLE.read_text(encoding="utf-8")
    port = free_port()
    for old, new in (
        ("/tmp/toolcalls-scratch", str(scratch)),
        ('data_dir = ".toolcalls"', f'data_dir = "{root / ".toolcalls"}"'),
        ("port = 7233", f"port = {port}"),
        ("ui_port = 8233", f"ui_port = {free_port()}"),
    ):
        assert old in text, f"examples/toolcalls.toml no longer has {old!r}"
        text = text.replace(old, new)
    text += f'\n[inbox]\nlisten = "127.0.0.1:{free_port()}"\n'
    assert tomllib.loads(text)["dev"]["port"] == port
    return text, port


def wait_until_serving(spawned: Spawned, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not all(ready in "".join(spawned.stdout + spawned.stderr) for ready in READY):
        assert spawned.process.poll() is None, "".join(spawned.stderr)[-3000:]
        assert time.monotonic() < deadline, f"not serving after {timeout}s: {spawned.stderr}"
        time.sleep(0.2)


def test_the_makefile_s_run_is_what_this_test_starts() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert MAKE_RUN in recipe, recipe
    assert "CONFIG ?= examples/toolcalls.toml" in makefile


@pytest.fixture(scope="module")
def make_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    root = tmp_path_factory.mktemp("make-run")
    scratch = root / "scratch"
    scratch.mkdir()  # what `make run` does first, for its scratch folder
    text, port = deployment(root, scratch)
    config = root / "toolcalls.toml"
    config.write_text(text, encoding="utf-8")
    command = [TOOLCALLS, "worker", "--dev", "--inbox", "--config", str(config)]
    spawned = Spawned(command, hermetic_env(root), cwd=root)
    try:
        wait_until_serving(spawned)
        yield MakeRun(f"127.0.0.1:{port}", scratch, root, config)
    finally:
        spawned.kill()
        kill_marked(str(root))


async def spawn(make_run: MakeRun, *args: str) -> asyncio.subprocess.Process:
    """``args`` run from the repository's root, as a user in another terminal runs them, with
    the server's address and the deployment's file (this one's scratch folder: an example's
    converter reads the file, whose roots must exist)."""
    env = hermetic_env(
        make_run.root, TEMPORAL_ADDRESS=make_run.address, TOOLCALLS_CONFIG=str(make_run.config)
    )
    return await asyncio.create_subprocess_exec(
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


def example_command(example: Example, make_run: MakeRun, *args: str) -> list[str]:
    script = f"examples/agents/{example.name}.py"
    return [sys.executable, script, *args, "--folder", str(make_run.scratch)]


def written(example: Example, make_run: MakeRun, before: set[Path], answer: str) -> Path:
    """The one file the example created, with its text, and the tool's result in the answer."""
    created = set(make_run.scratch.glob(example.note)) - before
    assert len(created) == 1, (created, answer)
    (note,) = created
    assert note.read_text(encoding="utf-8") == example.content
    assert answer.startswith(example.answer(note)), answer
    result = json.loads(answer[answer.index("{") :])  # create_file's result, as the model read it
    assert result["path"] == str(note)
    assert result["kind"] == "create"
    return note


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
async def test_the_example_approves_its_own_call_and_prints_the_tool_s_result(
    make_run: MakeRun, example: Example
) -> None:
    before = set(make_run.scratch.glob(example.note))
    process = await spawn(make_run, *example_command(example, make_run, "--approve-as", "alice"))
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    assert process.returncode == 0, err.decode()[-3000:]
    lines = out.decode().splitlines()
    written(example, make_run, before, lines[-1])
    if example.name == "pydantic_ai":
        assert lines[0].startswith("approving file-agent-")
        assert lines[0].endswith("/tools/create-1 as alice")
    if example.name == "openai_agents":
        waiting = APPROVE.search(lines[1])
        assert waiting, lines
        assert lines[1] == example.waiting.format(call=waiting["call"])
        assert waiting["call"].endswith(example.call)
        assert lines[2] == f"approved {waiting['call']} as alice"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
async def test_without_approve_as_it_waits_for_the_command_it_prints(
    make_run: MakeRun, example: Example
) -> None:
    before = set(make_run.scratch.glob(example.note))
    process = await spawn(make_run, *example_command(example, make_run))
    assert process.stdout is not None
    printed = ""
    while (asked := APPROVE.search(printed)) is None:
        line = (await asyncio.wait_for(process.stdout.readline(), TIMEOUT)).decode()
        assert line, f"ended without an approve command: {printed}"
        printed += line
    assert printed.splitlines()[-1] == example.waiting.format(call=asked["call"])
    assert asked["call"].endswith(example.call)
    assert set(make_run.scratch.glob(example.note)) == before  # nothing written before approval
    approve = await spawn(make_run, TOOLCALLS, "approve", asked["call"], "--by", "bob")
    _, approve_err = await asyncio.wait_for(approve.communicate(), 60)
    assert approve.returncode == 0, approve_err.decode()
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    assert process.returncode == 0, err.decode()[-3000:]
    written(example, make_run, before, out.decode().splitlines()[-1])
