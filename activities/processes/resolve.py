"""From a command request to the exact ``ProcessSpec`` that runs, and the deployment's checks.

One function resolves a command for the approval preview and again right before it runs, so what
a human approved is what runs, or the call fails with ``precondition_failed``. Resolution reads
the filesystem (``realpath``, ``stat``, a ``PATH`` search), so callers run it off the event loop.

Nothing here looks at the worker's own environment: a bare program name is searched for only in
the ``PATH`` of the environment the command will get, and only in its absolute entries (an empty
or relative entry would mean "the working directory", a classic way to run the wrong program).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from toolcalls.activities.processes.runner import ProcessSpec, usable_budget
from toolcalls.activities.processes.sandbox import SandboxGrant
from toolcalls.activities.processes.settings import (
    DEFAULT_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    MAX_TIMEOUT_SECONDS,
    ProcessSettings,
    ShellSettings,
)


class Problem(Exception):
    """Why a command cannot run as asked; ``fields`` are what to change, ``message`` says why."""

    def __init__(self, fields: Sequence[str], message: str) -> None:
        super().__init__(message)
        self.fields = list(fields)
        self.message = message


@dataclass(frozen=True)
class Resolved:
    """A command as it will run, and the identity of the file it will execute."""

    spec: ProcessSpec
    executable: str
    """``argv[0]`` with every link resolved: the file the kernel will load."""
    identity: str
    """Device, inode, size and modification time of that file: a replaced binary differs."""

    def precondition(self) -> dict[str, Any]:
        """What ``execute`` must find again: the spec and the file, exactly as previewed."""
        return {
            "spec": self.spec.shown(),
            "executable": self.executable,
            "identity": self.identity,
        }


@dataclass(frozen=True)
class Labels:
    """How problems name what to change: tool arguments, or configuration keys."""

    cwd: str = "cwd"
    executable: str = "argv[0]"
    env: str = "env"
    argv_field: str = "argv"


SHELL_LABELS = Labels(cwd="shell.cwd", executable="shell.shell", env="shell.env", argv_field="")


def resolve(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    timeout_seconds: float,
    max_output_bytes: int,
    *,
    roots: Sequence[Path] | None,
    labels: Labels = Labels(),
) -> Resolved:
    """The ``ProcessSpec`` for a request; ``roots=None`` trusts ``cwd`` (the deployment's own).

    Raises:
        Problem: naming what to change.
    """
    real_cwd = resolve_cwd(cwd, roots, labels)
    executable, real, identity = resolve_executable(argv[0], real_cwd, env, labels)
    spec = ProcessSpec(
        argv=[executable, *argv[1:]],
        cwd=real_cwd,
        env=dict(env),
        timeout_seconds=timeout_seconds,
        max_output_bytes=max_output_bytes,
    )
    return Resolved(spec=spec, executable=real, identity=identity)


def confine(resolved: Resolved, grant: SandboxGrant, labels: Labels = Labels()) -> Resolved:
    """``resolved`` to run inside ``grant``; its directory and program must be visible there.

    Raises:
        Problem: naming the directory or the program the sandbox does not show.
    """
    spec = resolved.spec
    if not grant.visible(spec.cwd):
        raise Problem([labels.cwd], f"{labels.cwd}: {spec.cwd}: not inside the sandbox")
    if not grant.visible(resolved.executable):
        fields = [labels.argv_field] if labels.argv_field else [labels.executable]
        raise Problem(
            fields,
            f"{labels.executable}: {resolved.executable}: not visible inside the sandbox (a "
            "deployment can bind its directory with sandbox.read_only)",
        )
    return replace(resolved, spec=spec.model_copy(update={"sandbox": grant}))


def resolve_cwd(cwd: str, roots: Sequence[Path] | None, labels: Labels = Labels()) -> str:
    """``cwd`` with every link resolved; it must be a directory inside one of ``roots``."""
    if not os.path.isabs(cwd):
        raise Problem([labels.cwd], f"{labels.cwd}: {cwd!r} is not an absolute path")
    try:
        real = os.path.realpath(cwd, strict=True)
    except OSError as exc:
        raise Problem([labels.cwd], f"{labels.cwd}: {cwd}: {_reason(exc)}") from None
    if not os.path.isdir(real):
        raise Problem([labels.cwd], f"{labels.cwd}: {cwd}: not a directory")
    if roots is not None and not any(_inside(real, os.path.realpath(root)) for root in roots):
        shown = cwd if real == cwd else f"{cwd} (resolves to {real})"
        raise Problem([labels.cwd], f"{labels.cwd}: {shown}: not inside a configured root")
    return real


def resolve_executable(
    name: str, cwd: str, env: Mapping[str, str], labels: Labels = Labels()
) -> tuple[str, str, str]:
    """The path to run for ``name``, its real path and its identity.

    An absolute path is used as given, a path with a slash is relative to ``cwd``, and a bare name
    is searched for in the absolute entries of ``env["PATH"]``.
    """
    argv_fields = [labels.argv_field] if labels.argv_field else [labels.executable]
    if "/" in name:
        path = name if os.path.isabs(name) else os.path.join(cwd, name)
    else:
        search = env.get("PATH")
        if search is None:
            raise Problem(
                [*argv_fields, labels.env],
                f"{labels.executable}: {name!r} is a bare name and {labels.env} has no PATH: "
                f"give a path, or a PATH in {labels.env}",
            )
        found = next(
            (
                os.path.join(entry, name)
                for entry in search.split(":")
                if os.path.isabs(entry) and _is_executable_file(os.path.join(entry, name))
            ),
            None,
        )
        if found is None:
            raise Problem(
                [*argv_fields, labels.env],
                f"{labels.executable}: {name!r} not found in the PATH of {labels.env} "
                f"({search!r}; only absolute entries are searched)",
            )
        path = found
    try:
        info = os.stat(path)
    except OSError as exc:
        raise Problem(argv_fields, f"{labels.executable}: {path}: {_reason(exc)}") from None
    if not stat.S_ISREG(info.st_mode):
        raise Problem(argv_fields, f"{labels.executable}: {path}: not a regular file")
    if not os.access(path, os.X_OK):
        raise Problem(argv_fields, f"{labels.executable}: {path}: not executable")
    identity = f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
    return path, os.path.realpath(path), identity


def limits(
    timeout_seconds: float | None, max_output_bytes: int | None, settings: ProcessSettings
) -> tuple[float, int]:
    """The limits a command runs with: the model's, bounded by the deployment's ceilings.

    ``None`` asks for the default, itself cut to a ceiling set lower than it, so that a model
    that leaves the limits alone is never refused for them.
    """
    if timeout_seconds is None:
        timeout_seconds = min(DEFAULT_TIMEOUT_SECONDS, settings.max_timeout_seconds)
    if max_output_bytes is None:
        max_output_bytes = min(DEFAULT_OUTPUT_BYTES, settings.max_output_bytes)
    problems = []
    fields = []
    if timeout_seconds > settings.max_timeout_seconds:
        fields.append("timeout_seconds")
        problems.append(
            f"timeout_seconds: {timeout_seconds:g} is over this deployment's limit of "
            f"{settings.max_timeout_seconds:g}"
        )
    if max_output_bytes > settings.max_output_bytes:
        fields.append("max_output_bytes")
        problems.append(
            f"max_output_bytes: {max_output_bytes} is over this deployment's limit of "
            f"{settings.max_output_bytes}"
        )
    if problems:
        raise Problem(fields, "; ".join(problems))
    return timeout_seconds, max_output_bytes


def shell_env(settings: ShellSettings) -> dict[str, str]:
    """The shell's complete environment: the configured one, or only ``PATH=os.defpath``."""
    return dict(settings.env) if settings.env is not None else {"PATH": os.defpath}


def config_problems(
    process: ProcessSettings,
    shell: ShellSettings,
    enabled: set[str],
    served: set[str],
    start_to_close: Mapping[str, float],
) -> list[str]:
    """What ``execute_command`` and ``run_shell`` need and the configuration lacks, by key.

    Directories and the shell must exist only where the tools run (``served``), not on every host
    that shares the file. ``start_to_close`` is each tool's activity timeout in seconds: the
    longest command, its kill and its report must fit inside it, or a slow command would look
    like a lost worker.
    """
    problems: list[str] = []
    if "execute_command" in enabled:
        if not process.roots:
            problems.append("process.roots: execute_command needs at least one root")
        for index, root in enumerate(process.roots):
            if not root.is_absolute():
                problems.append(f"process.roots.{index}: {str(root)!r} is not an absolute path")
            elif "execute_command" in served and not root.is_dir():
                problems.append(f"process.roots.{index}: {root}: not an existing directory")
        problems += _fits(
            "execute_command",
            "process.max_timeout_seconds",
            process.max_timeout_seconds,
            process.kill_grace_seconds,
            start_to_close,
        )
    if "run_shell" in enabled:
        problems += _shell_problems(shell, on_this_host="run_shell" in served)
        if shell.timeout_seconds > MAX_TIMEOUT_SECONDS:
            problems.append(
                f"shell.timeout_seconds: at most {MAX_TIMEOUT_SECONDS:g}, "
                f"not {shell.timeout_seconds:g}"
            )
        problems += _fits(
            "run_shell",
            "shell.timeout_seconds",
            shell.timeout_seconds,
            shell.kill_grace_seconds,
            start_to_close,
        )
    return problems


def _shell_problems(shell: ShellSettings, *, on_this_host: bool) -> list[str]:
    if shell.cwd is None:
        return ["shell.cwd: run_shell needs the shell's working directory"]
    if not shell.cwd.is_absolute():
        return [f"shell.cwd: {str(shell.cwd)!r} is not an absolute path"]
    env = shell_env(shell)
    bad = [name for name, value in env.items() if not name or "=" in name or "\0" in name + value]
    if bad:
        return [f"shell.env: {bad}: a name must be nonempty without '=', and nothing may hold NUL"]
    if not on_this_host:
        return []
    try:
        cwd = resolve_cwd(str(shell.cwd), None, SHELL_LABELS)
        resolve_executable(shell.shell, cwd, env, SHELL_LABELS)
    except Problem as problem:
        return [problem.message]
    return []


def _fits(
    tool: str, key: str, timeout: float, grace: float, start_to_close: Mapping[str, float]
) -> list[str]:
    limit = start_to_close.get(tool)
    if limit is None or usable_budget(limit, grace) >= timeout:
        return []
    return [
        f"{key}: {timeout:g} s with a kill grace of {grace:g} s does not fit {tool}'s "
        f"start_to_close of {limit:g} s (activities.timeouts.{tool})"
    ]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _is_executable_file(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
