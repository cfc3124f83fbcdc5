"""What a deployment decides about process tools; the model never sees or changes these."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.activities.processes.code_env import loads_code

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
