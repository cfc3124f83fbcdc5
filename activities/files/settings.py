"""What a deployment decides about file tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from toolcalls.activities.family import needs
from toolcalls.activities.files.names import portable_root

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_WRITE_BYTES = 1024 * 1024
"""Written content travels through workflow history, so it stays well under Temporal's limits."""


class FilesSettings(BaseModel):
    """Roots the tools may touch and the checkpoint store that enables writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roots: list[Annotated[Path, AfterValidator(portable_root)]] = Field(default_factory=list)
    """Absolute directories; every path must be inside one."""
    checkpoints: Path | None = None
    """SQLite file for recovery records; without it only the read tools exist."""
    max_file_bytes: int = Field(default=MAX_FILE_BYTES, gt=0)
    max_write_bytes: int = Field(default=MAX_WRITE_BYTES, gt=0, le=MAX_WRITE_BYTES)


def roots_problems(
    key: str, roots: list[Path], tools: list[str], *, on_this_host: bool
) -> list[str]:
    """What is wrong with the roots under ``key`` for ``tools``: none, a relative one, or (on a
    host that runs the tools) one that is not an existing directory."""
    found = [] if roots else [f"{key}: {needs(tools)} at least one root"]
    for index, root in enumerate(roots):
        if not root.is_absolute():
            found.append(f"{key}.{index}: {root} is not an absolute path")
        elif on_this_host and not root.is_dir():
            found.append(f"{key}.{index}: {root} is not an existing directory")
    return found
