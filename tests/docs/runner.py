"""Running snippets as a reader would paste them, against the test's Temporal server.

Each page runs in a directory of its own (``Setting.root``) with the project's interpreter, the
``toolcalls`` and ``temporal`` commands first on ``PATH`` and ``TEMPORAL_ADDRESS`` naming the
session's dev server. README.md's directory stands in for the repository (``examples/``, a
``.venv``, the ``Makefile``); a docs page's also holds ``toolcalls.toml``, the deployment its pages
speak of (the example deployment with the sections the pages set up, ``conftest.DEPLOYMENT``).
What changes in a snippet before it runs is ``Setting.substitutions`` and
nothing else: the address ``localhost:7233`` becomes the test server's, the scratch folder a
temporary one, and fixed ports free ones, so that runs beside a developer's ``make run`` do not
collide with it.

- Python: the unit is written to ``snippet_LINE.py`` in the directory and run with ``python``; it
  must exit 0. A ``file NAME`` block is written as ``NAME`` first.
- Shell: each command (in a transcript, a ``console`` block or one with ``$ `` prompts, only the
  prompted lines; every line otherwise) runs in
  ``bash`` and must exit 0; ``cd``, ``export`` and ``. .venv/bin/activate`` carry over to the
  next command. A serving command (``SERVING``) is started, must print its ready line, and is
  stopped with SIGTERM once the next serving command starts or the block ends. ``make run``
  serves; another ``make`` target is checked with ``make -n``. ``pip install
  'toolcalls[EXTRAS]'`` is checked, not run: each extra must exist.
- TOML: parsed and checked as the configuration loader does (``run_toml``).
- Cedar: parsed by ``cedarpy`` as a ``[[policies]]`` file is at a worker's start (``run_cedar``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tests.docs.blocks import ROOT, Unit
from tests.worker.support import Spawned
from toolcalls.worker.config import build_catalog, parse_config

COMMAND_TIMEOUT = 120
"""Seconds one command or Python snippet may take; the slowest, a dev server's start, takes a
few."""
SERVING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^make run\b"), "inbox at "),
    (re.compile(r"\btoolcalls worker\b.*--inbox"), "inbox at "),
    (re.compile(r"\b(toolcalls worker|python -m toolcalls\.worker)\b"), "polling task queue"),
    (re.compile(r"\btoolcalls dev\b"), "Temporal dev server at"),
    (re.compile(r"\btoolcalls codec-server\b"), "codec server at"),
    (re.compile(r"\btoolcalls mcp\b.*--http"), "MCP server at"),
    (re.compile(r"\btoolcalls inbox\b(?!\s+hash-password)"), "inbox at "),
)
"""Commands that serve until stopped, and the line each prints once it serves."""
MAKE = re.compile(r"^make (?P<target>[\w-]+)(?P<variables>(\s+\w+=\S*)*)(\s+#.*)?$")
"""``make run`` serves; another target, with any ``NAME=value`` it sets, is checked with ``make
-n`` (it would run this suite, or a benchmark for minutes)."""
STDIO_MCP = re.compile(r"\btoolcalls mcp\b")
PIP_INSTALL = re.compile(r"^pip install '?toolcalls\[(?P<extras>[\w,-]+)\]'?(\s+#.*)?$")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "docs", "version": "0"},
    },
}


@dataclass(frozen=True)
class Finished:
    code: int
    stdout: str
    stderr: str


@dataclass
class Setting:
    """Where one page's snippets run."""

    root: Path
    env: dict[str, str]
    substitutions: list[tuple[str, str]]

    def substitute(self, text: str) -> str:
        for old, new in self.substitutions:
            text = text.replace(old, new)
        return text


def commands(unit: Unit) -> list[str]:
    """The commands of a shell unit, continuation lines joined, comment lines dropped.

    A transcript (a ``console`` block, or one whose commands start with ``$ ``) also shows what
    the commands print: only its ``$ `` lines are commands.
    """
    found: list[str] = []
    for block in unit.blocks:
        lines = block.text.splitlines()
        transcript = block.fence == "console" or any(line.startswith("$ ") for line in lines)
        pending = ""
        for line in lines:
            if transcript and not pending:
                if not line.startswith("$ "):
                    continue  # output
                line = line[2:]
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            command = (pending + line).strip()
            pending = ""
            if command and not command.startswith("#"):
                found.append(command)
    return found


def run_toml(unit: Unit, setting: Setting) -> None:
    """Parse and check the block as a host that shares the file but runs none of its tools
    reads it: the paths a tool needs (roots, databases) must exist only where the tool runs."""
    try:
        config = parse_config(tomllib.loads(unit.text), unit.first.where)
        elsewhere = config.worker.model_copy(update={"serve_tools": False})
        build_catalog(config.model_copy(update={"worker": elsewhere}), source=unit.first.where)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise AssertionError(f"{unit.first.where}: {exc}") from None


def run_cedar(unit: Unit, setting: Setting) -> None:
    """Load the block as a one-file policy set, as a worker does at start."""
    from toolcalls.activities.cedar import PolicyError, PolicySet, PolicySetSettings

    path = setting.root / f"policy_{unit.first.line}.cedar"
    path.write_text(unit.text, encoding="utf-8")
    try:
        PolicySet.load(PolicySetSettings(files=[path]))
    except PolicyError as exc:
        raise AssertionError(f"{unit.first.where}: {exc}") from None


def run_python(unit: Unit, setting: Setting) -> None:
    text = setting.substitute(unit.text)
    if unit.first.save_as:
        # Run by the blocks that import it; compiled here, so a typo shows on its own line.
        try:
            compile(text, unit.first.where, "exec")
        except SyntaxError as exc:
            raise AssertionError(f"{unit.first.where}: {exc}") from None
        (setting.root / unit.first.save_as).write_text(text, encoding="utf-8")
        return
    path = setting.root / f"snippet_{unit.first.line}.py"
    path.write_text(text, encoding="utf-8")
    done = finish([sys.executable, path.name], setting, unit.first.where)
    assert done.code == 0, (
        f"{unit.first.where}: exit {done.code}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    )


def run_shell(unit: Unit, setting: Setting) -> None:
    """Run a unit's commands in order. A serving command keeps serving, as in a terminal of
    its own, until the next serving command starts or the unit ends."""
    state = setting.root / ".snippet-shell-state"
    state.touch()
    serving: Spawned | None = None
    try:
        for command in commands(unit):
            where = f"{unit.first.where}: {command}"
            command = setting.substitute(command)
            if pip := PIP_INSTALL.match(command):
                _check_extras(pip.group("extras").split(","), where)
                continue
            if (make := MAKE.match(command)) and make.group("target") != "run":
                _run(
                    f"make -n {make.group('target')}{make.group('variables')}",
                    setting,
                    state,
                    where,
                )
                continue
            ready = next((line for pattern, line in SERVING if pattern.search(command)), None)
            if ready is not None:
                _stop(serving)
                serving = _serve(command, ready, setting, state, where)
            elif STDIO_MCP.search(command):
                _stdio_mcp(command, setting, state, where)
            else:
                _run(command, setting, state, where)
    finally:
        _stop(serving)


def _check_extras(extras: list[str], where: str) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    unknown = [extra for extra in extras if extra not in declared]
    assert not unknown, f"{where}: no such extra {unknown}"


def _script(command: str, state: Path, keep: bool) -> str:
    script = f"source {state}\n{command}\n"
    if keep:
        # What the next command inherits: the environment and the working directory.
        script += (
            f"__status=$?\nexport -p > {state}\nprintf 'cd %q\\n' \"$PWD\" >> {state}\n"
            "exit $__status\n"
        )
    return script


def finish(args: list[str], setting: Setting, where: str, given: str = "") -> Finished:
    """Run to completion in a process group of its own, killed whole if it overstays."""
    process = subprocess.Popen(
        args,
        cwd=setting.root,
        env=setting.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(given, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"{where}: still running after {COMMAND_TIMEOUT}s") from None
    finally:
        # Whatever it left behind in its group (a server it started) goes with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return Finished(process.returncode, out, err)


def _run(command: str, setting: Setting, state: Path, where: str) -> None:
    done = finish(["bash", "-c", _script(command, state, keep=True)], setting, where)
    assert done.code == 0, f"{where}: exit {done.code}\n{done.stdout}{done.stderr}"


def _serve(command: str, ready: str, setting: Setting, state: Path, where: str) -> Spawned:
    script = _script(command, state, keep=False)
    spawned = Spawned(["bash", "-c", script], setting.env, setting.root)
    try:
        spawned.wait_for_line(ready, timeout=COMMAND_TIMEOUT)
    except AssertionError as exc:
        spawned.kill()
        raise AssertionError(f"{where}: {exc}") from None
    return spawned


def _stop(spawned: Spawned | None) -> None:
    """SIGTERM, as a terminal's Ctrl-C would end it, then whatever is left is killed."""
    if spawned is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(spawned.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        spawned.finish(60)
    spawned.kill()


def _stdio_mcp(command: str, setting: Setting, state: Path, where: str) -> None:
    """A client starts the stdio server: it must answer ``initialize``, then leave at EOF."""
    script = _script(command, state, keep=False)
    done = finish(["bash", "-c", script], setting, where, json.dumps(INITIALIZE) + "\n")
    assert '"serverInfo"' in done.stdout, f"{where}: exit {done.code}\n{done.stderr}"
