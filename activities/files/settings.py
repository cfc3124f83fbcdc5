"""What a deployment decides about file tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from activities.files.names import portable_root

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
