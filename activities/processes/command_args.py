"""The arguments of ``execute_command`` and ``run_shell``, and the limits checked on them.

Everything here is checked when a call is planned, before any approval: a NUL byte (which the
kernel would cut an argument at), an empty program, a relative ``cwd``, an argument or an
environment larger than the kernel accepts, a variable that loads code (``code_env``) unless the
deployment's arguments model allows it (``execute_command_args``). What depends on the deployment
(roots, ceilings, the files named) is checked when the command is resolved (``resolve``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from toolcalls.activities.base import ToolArgs
from toolcalls.activities.processes.code_env import refusal, refused_env
from toolcalls.activities.processes.settings import DEFAULT_OUTPUT_BYTES, DEFAULT_TIMEOUT_SECONDS

MAX_ARGV_ITEMS = 4_096
MAX_ENV_VARS = 1_024
MAX_ARG_BYTES = 131_071
"""One argument or ``NAME=value``: Linux's ``MAX_ARG_STRLEN`` (32 pages) less the NUL."""
MAX_EXEC_BYTES = 262_144
"""argv and env together: far below ``ARG_MAX``, and below Temporal's payload warning."""
MAX_PATH_BYTES = 4_096
"""``PATH_MAX``."""


def _utf8_size(value: str, where: str) -> int:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{where}: not valid Unicode text") from None
    if "\0" in value:
        raise ValueError(f"{where}: contains a NUL byte")
    if size > MAX_ARG_BYTES:
        raise ValueError(f"{where}: {size} bytes; the limit is {MAX_ARG_BYTES}")
    return size


def _env_entries(value: Any) -> Any:
    """The model-facing ``["NAME=value", ...]`` form as a mapping; a JSON object passes through."""
    if not isinstance(value, list):
        return value
    env: dict[str, Any] = {}
    for index, entry in enumerate(value):
        if not isinstance(entry, str):
            raise ValueError(f"entry {index} must be a NAME=value string")
        name, sep, text = entry.partition("=")
        if not sep or not name:
            raise ValueError(f"entry {index} {entry[:40]!r} is not NAME=value")
        if name in env:
            raise ValueError(f"{name} is given twice")
        env[name] = text
    return env


def _checked_env(env: dict[str, str]) -> dict[str, str]:
    if len(env) > MAX_ENV_VARS:
        raise ValueError(f"{len(env)} variables; the limit is {MAX_ENV_VARS}")
    for name, value in env.items():
        if not name or "=" in name:
            raise ValueError(f"{name!r}: a name must be nonempty and without '='")
        _utf8_size(f"{name}={value}", repr(name[:40]))
    return env


Environment = Annotated[
    dict[str, str],
    BeforeValidator(_env_entries),
    AfterValidator(_checked_env),
    WithJsonSchema(
        {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": MAX_ENV_VARS,
        },
        mode="validation",
    ),
]


class ExecuteCommandArgs(ToolArgs):
    allowed_env: ClassVar[frozenset[str]] = frozenset()
    """Code-loading variables that pass anyway: the deployment's, in ``execute_command_args``."""

    argv: list[str] = Field(
        min_length=1,
        max_length=MAX_ARGV_ITEMS,
        description=(
            "The program and its arguments, passed as they are with no shell. argv[0] is an "
            "absolute path, a path relative to cwd (containing a '/'), or a bare name looked up "
            "in the PATH of env."
        ),
    )
    cwd: str = Field(
        description="Absolute working directory; it must resolve inside a configured root."
    )
    env: Environment = Field(
        description=(
            'The complete environment as "NAME=value" strings; [] inherits nothing. Include '
            "PATH to run a program by bare name. Variables that make programs load or run code "
            "(LD_*, PYTHONPATH, NODE_OPTIONS, BASH_ENV, GIT_CONFIG_*, EDITOR, ...) are refused."
        ),
    )
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description=(
            f"Wall-time limit in seconds; the process group is killed when it passes. null "
            f"means {DEFAULT_TIMEOUT_SECONDS:g}, or the deployment's maximum if that is lower."
        ),
    )
    max_output_bytes: int | None = Field(
        default=None,
        gt=0,
        description=(
            f"Bytes of stdout and stderr kept, together; the rest is discarded. null means "
            f"{DEFAULT_OUTPUT_BYTES}, or the deployment's maximum if that is lower."
        ),
    )

    @field_validator("argv")
    @classmethod
    def _argv(cls, argv: list[str]) -> list[str]:
        if not argv[0]:
            raise ValueError("argv[0] is empty")
        for index, arg in enumerate(argv):
            _utf8_size(arg, f"argv[{index}]")
        return argv

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, cwd: str) -> str:
        if "\0" in cwd:
            raise ValueError("contains a NUL byte")
        try:
            size = len(cwd.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError("not valid Unicode text") from None
        if size > MAX_PATH_BYTES:
            raise ValueError(f"longer than {MAX_PATH_BYTES} bytes")
        if not cwd.startswith("/"):
            raise ValueError(f"{cwd[:100]!r} is not an absolute path")
        return cwd

    @field_validator("env")
    @classmethod
    def _fits_exec(cls, env: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        argv = info.data.get("argv") or []
        size = sum(len(a.encode()) + 1 for a in argv)
        size += sum(len(k.encode()) + len(v.encode()) + 2 for k, v in env.items())
        if size > MAX_EXEC_BYTES:
            raise ValueError(
                f"argv and env together are {size} bytes; the limit is {MAX_EXEC_BYTES}"
            )
        return env

    @field_validator("env")
    @classmethod
    def _loads_no_code(cls, env: dict[str, str]) -> dict[str, str]:
        refused = refused_env(env, cls.allowed_env)
        if refused:
            raise ValueError(refusal(refused))
        return env


def execute_command_args(allow_env: Iterable[str]) -> type[ExecuteCommandArgs]:
    """``ExecuteCommandArgs`` as a deployment offers it: the names in ``allow_env`` pass plan.

    The plan validates arguments with the catalog's model alone, so a deployment that allows
    code-loading variables (``process.allow_env``) advertises this model instead.
    """
    allowed = frozenset(allow_env)
    return _allowing(allowed) if allowed else ExecuteCommandArgs


@functools.cache
def _allowing(allowed: frozenset[str]) -> type[ExecuteCommandArgs]:
    class ExecuteCommandArgsAllowing(ExecuteCommandArgs):
        allowed_env: ClassVar[frozenset[str]] = allowed

    return ExecuteCommandArgsAllowing


class RunShellArgs(ToolArgs):
    command: str = Field(
        description=(
            "A script for the deployment's POSIX shell (sh -c): pipelines, redirects and ordinary "
            "shell syntax. Each call starts a fresh shell in the deployment's directory."
        ),
    )

    @field_validator("command")
    @classmethod
    def _command(cls, command: str) -> str:
        if not command.strip():
            raise ValueError("the command is blank")
        _utf8_size(command, "command")
        return command
