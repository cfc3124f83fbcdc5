"""Real git repositories for the ``git`` tool tests, made and inspected with plain git.

``Repo.git`` runs git the way a person at a terminal would, without the tool's safety switches
(but with no system or global configuration, so the host cannot change the results): the tests
use it to build repositories and, as a control, to show that a hostile configuration really does
run its program when nothing stops it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from temporalio.testing import ActivityEnvironment

from tests.support.processes import activity_env, executable
from toolcalls.activities.base import CallContext
from toolcalls.activities.processes.git import GitArgs, GitTools
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.runner import ProcessResult
from toolcalls.activities.processes.settings import GitSettings

GIT = shutil.which("git") or "/usr/bin/git"
DATE = "2020-01-02T03:04:05+00:00"
PLAIN_ENV = {
    "PATH": os.defpath,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": DATE,
    "GIT_COMMITTER_DATE": DATE,
}
"""Commits made by the tests are reproducible: same content, same ids."""


@dataclasses.dataclass(frozen=True)
class Repo:
    path: Path

    @classmethod
    def init(cls, path: Path) -> Repo:
        path.mkdir(parents=True, exist_ok=True)
        repo = cls(path)
        repo.git("init", "-q", "-b", "main")
        return repo

    def git(self, *args: str, check: bool = True, **env: str) -> str:
        """Plain git in the repository; its stdout."""
        done = subprocess.run(
            [GIT, *args],
            cwd=self.path,
            env={**PLAIN_ENV, "HOME": str(self.path.parent), **env},
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """Plain git, whatever its exit code."""
        return subprocess.run(
            [GIT, *args],
            cwd=self.path,
            env={**PLAIN_ENV, "HOME": str(self.path.parent), **env},
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )

    def write(self, name: str, text: str) -> Path:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def commit(self, message: str, **files: str) -> str:
        """Write ``files`` (name=text), stage everything and commit; the new commit's id."""
        for name, text in files.items():
            self.write(name, text)
        self.git("add", "--all")
        self.git("commit", "-q", "-m", message)
        return self.rev("HEAD")

    def rev(self, revision: str) -> str:
        return self.git("rev-parse", revision).strip()

    def config(self, key: str, value: str) -> None:
        self.git("config", key, value)


def marker_script(bin_dir: Path, markers: Path, name: str, *, passthrough: bool = True) -> str:
    """An executable that leaves ``markers/name`` behind when it runs (then copies stdin to
    stdout, so it also works as a filter or textconv); its path."""
    markers.mkdir(parents=True, exist_ok=True)
    body = f"touch '{markers / name}'" + ("\nexec cat" if passthrough else "")
    return str(executable(bin_dir / name, body))


def ran(markers: Path) -> list[str]:
    """The names of the marker scripts that ran."""
    return sorted(p.name for p in markers.iterdir()) if markers.exists() else []


CONTEXT = CallContext(
    workflow_id="wf", call_id="call", idempotency_key="wf:call", approval=None, precondition=None
)


def git_tools(repo: Repo | Path, ledger: Path | None = None, **settings: Any) -> GitTools:
    cwd = repo.path if isinstance(repo, Repo) else repo
    options: dict[str, Any] = {"cwd": cwd, "allow_write": True, "kill_grace_seconds": 0.5}
    options.update(settings)
    return GitTools(GitSettings(**options), ProcessLedger(ledger) if ledger else None)


async def run_git(
    tools: GitTools,
    env: ActivityEnvironment | None = None,
    call: CallContext = CONTEXT,
    **arguments: Any,
) -> ProcessResult:
    """One ``git`` call in an activity context, arguments validated as the plan would."""
    args = GitArgs.model_validate(arguments)
    result: ProcessResult = await (env or activity_env()).run(tools.git, args, call)
    return result


def with_env(env: ActivityEnvironment, **changes: Any) -> ActivityEnvironment:
    env.info = dataclasses.replace(env.info, **changes)
    return env


def slow_git(bin_dir: Path, tag: str, operations: tuple[str, ...] = ("status", "commit")) -> Path:
    """A git wrapper that, for the subcommands in ``operations``, prints ``started`` and then
    sleeps ``tag`` seconds in a child (so the whole group must be killed); else plain git."""
    cases = "\n".join(
        f'    {op}) echo "started {op}"; sleep {tag} & wait; exit 0 ;;' for op in operations
    )
    script = f'for arg in "$@"; do\n  case "$arg" in\n{cases}\n  esac\ndone\nexec {GIT} "$@"'
    return executable(bin_dir / "slow-git", script)


def sleepers(tag: str) -> list[int]:
    """Processes whose command line is ``sleep <tag>`` (the wrapper's children), still running."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.split(b"\0")[:2] == [b"sleep", tag.encode()]:
            found.append(int(entry.name))
    return found
