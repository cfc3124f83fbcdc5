"""What a deployment decides about process tools; the model never sees or changes these."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.activities.processes.code_env import loads_code
from toolcalls.activities.processes.sandbox import (
    DEFAULT_CPU_SECONDS,
    DEFAULT_FILE_SIZE_BYTES,
    DEFAULT_MEMORY_BYTES,
    HIDDEN_PATHS,
    SYSTEM_PATHS,
    Backend,
    Limits,
    SandboxGrant,
    build_grant,
    find_user,
)

DEFAULT_TIMEOUT_SECONDS = 60.0
MAX_TIMEOUT_SECONDS = 300.0
DEFAULT_OUTPUT_BYTES = 65_536
MAX_OUTPUT_BYTES = 1_048_576
KILL_GRACE_SECONDS = 2.0


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProcessSettings(_Settings):
    """``execute_command``: where commands may run and the ceilings on what the model asks for."""

    roots: list[Path] = Field(default_factory=list)
    """Absolute directories a command's ``cwd`` must be inside (after resolving links)."""
    max_timeout_seconds: float = Field(default=MAX_TIMEOUT_SECONDS, gt=0)
    max_output_bytes: int = Field(default=MAX_OUTPUT_BYTES, gt=0)
    kill_grace_seconds: float = Field(default=KILL_GRACE_SECONDS, ge=0)
    """After SIGTERM to the process group, how long before SIGKILL."""
    allow_env: list[str] = Field(default_factory=list)
    """Variables a call's ``env`` may hold although they load code (``code_env``), by exact name."""

    @field_validator("allow_env")
    @classmethod
    def _allow_env(cls, names: list[str]) -> list[str]:
        pointless = [name for name in names if loads_code(name) is None]
        if pointless:
            raise ValueError(
                f"{', '.join(map(repr, pointless))}: not refused by execute_command; only names "
                "that load code need allowing"
            )
        return names


class ShellSettings(_Settings):
    """``run_shell``: the deployment's shell, directory, environment and limits."""

    cwd: Path | None = None
    env: dict[str, str] | None = None
    """The complete environment; ``None`` gives only ``PATH=os.defpath``."""
    shell: str = "/bin/sh"
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    max_output_bytes: int = Field(default=DEFAULT_OUTPUT_BYTES, gt=0)
    kill_grace_seconds: float = Field(default=KILL_GRACE_SECONDS, ge=0)


class SandboxSettings(_Settings):
    """``[processes.sandbox]``, ``[git.sandbox]``: what a sandboxed command sees past its roots."""

    bwrap: Path = Path("/usr/bin/bwrap")
    prlimit: Path = Path("/usr/bin/prlimit")
    """Run inside the sandbox to set the limits: it must lie under a read-only system path."""
    read_only: list[Path] = Field(default_factory=list)
    """Extra host directories bound read-only (a language runtime outside ``/usr``, say)."""
    writable: list[Path] = Field(default_factory=list)
    """Extra host directories bound read-write, beside the tool's roots."""
    hide: list[Path] = Field(default_factory=lambda: [Path(p) for p in HIDDEN_PATHS])
    """Paths under the read-only system a command sees empty; the ones this host lacks are
    skipped."""
    network: bool = False
    """Share the host's network (package installs); off, the sandbox has no network at all."""
    user: str | None = None
    """The host user bwrap runs as (a name or uid); needs a worker running as root. ``None``: the
    worker's own user, inside a user namespace without capabilities."""
    roots_writable: bool = True
    """Whether the tool's roots are bound read-write (``git`` without ``allow_write``: read-only
    whatever this says)."""
    cpu_seconds: int | None = Field(default=DEFAULT_CPU_SECONDS, gt=0)
    memory_bytes: int | None = Field(default=DEFAULT_MEMORY_BYTES, gt=0)
    processes: int | None = Field(default=None, gt=0)
    file_size_bytes: int | None = Field(default=DEFAULT_FILE_SIZE_BYTES, gt=0)

    @field_validator("read_only", "writable", "hide")
    @classmethod
    def _absolute(cls, paths: list[Path]) -> list[Path]:
        relative = [str(path) for path in paths if not path.is_absolute()]
        if relative:
            raise ValueError(f"{', '.join(map(repr, relative))}: not an absolute path")
        return paths

    @field_validator("hide")
    @classmethod
    def _hidden_in_system(cls, paths: list[Path]) -> list[Path]:
        outside = [str(p) for p in paths if not any(_under(p, Path(s)) for s in SYSTEM_PATHS)]
        if outside:
            raise ValueError(
                f"{', '.join(map(repr, outside))}: not under a system path the sandbox shows "
                f"({', '.join(SYSTEM_PATHS)}); anything else is absent already"
            )
        return paths

    def limits(self) -> Limits:
        return Limits(
            cpu_seconds=self.cpu_seconds,
            memory_bytes=self.memory_bytes,
            processes=self.processes,
            file_size_bytes=self.file_size_bytes,
        )

    def grant(self, writable: list[Path], read_only: list[Path]) -> SandboxGrant:
        """The grant for a tool whose roots are ``writable`` and ``read_only``, as this host is
        now.

        Raises:
            ValueError: a path or the user does not exist.
        """
        if not self.roots_writable:
            writable, read_only = [], [*writable, *read_only]
        return build_grant(
            bwrap=str(self.bwrap),
            prlimit=str(self.prlimit),
            writable=[*self.writable, *writable],
            read_only=read_only,
            extra_read_only=self.read_only,
            system=SYSTEM_PATHS,
            hide=self.hide,
            network=self.network,
            user=self.user,
            limits=self.limits(),
        )


class ProcessesSettings(_Settings):
    """``[processes]``: where ``execute_command`` and ``run_shell`` run."""

    backend: Backend = Backend.HOST
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)


class GitSettings(_Settings):
    """``git``: the repository, whether writes exist, and limits."""

    cwd: Path | None = None
    allow_write: bool = False
    env: dict[str, str] | None = None
    """Extra environment; ``None`` gives only ``PATH=os.defpath``. Safety variables always win."""
    executable: str = "git"
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    max_output_bytes: int = Field(default=DEFAULT_OUTPUT_BYTES, gt=0)
    kill_grace_seconds: float = Field(default=KILL_GRACE_SECONDS, ge=0)
    author_name: str = "toolcalls"
    author_email: str = "toolcalls@localhost"
    backend: Backend = Backend.HOST
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def sandbox_problems(key: str, sandbox: SandboxSettings, *, on_this_host: bool) -> list[str]:
    """What stops ``[KEY.sandbox]`` from starting a sandbox here, each naming its key."""
    problems = []
    if not sandbox.bwrap.is_absolute():
        problems.append(f"{key}.sandbox.bwrap: {str(sandbox.bwrap)!r} is not an absolute path")
    if sandbox.user is not None:
        try:
            find_user(sandbox.user)
        except ValueError as exc:
            problems.append(f"{key}.sandbox.user: {exc}")
        else:
            if on_this_host and os.geteuid() != 0:
                problems.append(
                    f"{key}.sandbox.user: running bwrap as {sandbox.user!r} needs a worker "
                    "running as root"
                )
    if not on_this_host:
        return problems
    if not (sandbox.bwrap.is_file() and os.access(sandbox.bwrap, os.X_OK)):
        problems.append(
            f"{key}.sandbox.bwrap: {sandbox.bwrap}: not an executable file (install bubblewrap)"
        )
    if sandbox.limits().options() and not (
        sandbox.prlimit.is_file() and os.access(sandbox.prlimit, os.X_OK)
    ):
        problems.append(f"{key}.sandbox.prlimit: {sandbox.prlimit}: not an executable file")
    elif not any(_under(sandbox.prlimit, Path(system)) for system in SYSTEM_PATHS):
        problems.append(
            f"{key}.sandbox.prlimit: {sandbox.prlimit}: not under a system path the sandbox shows"
        )
    for name, paths in (("read_only", sandbox.read_only), ("writable", sandbox.writable)):
        for index, path in enumerate(paths):
            if not path.is_dir():
                problems.append(f"{key}.sandbox.{name}.{index}: {path}: not an existing directory")
    return problems
