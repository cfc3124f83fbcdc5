"""What a deployment decides about key/value storage tools."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

MAX_VALUE_BYTES = 65_536
MAX_STORE_BYTES = 1_048_576
MAX_KEYS = 1_000
MAX_VALUE_BYTES_CEILING = 204_800
"""No deployment may allow values over 200 KiB: a value travels in the call's request, plan,
approval request and memo, and must stay under Temporal's 256 KB payload warning in each."""


class StorageSettings(BaseModel):
    """The namespace the tools own, where it lives, and its limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    database: Path | None = None
    """SQLite file; ``None`` keeps the namespace in the worker's memory."""
    namespace: str = Field(default="tool-values", min_length=1, max_length=200)
    allow_write: bool = False
    max_value_bytes: int = Field(default=MAX_VALUE_BYTES, gt=0, le=MAX_VALUE_BYTES_CEILING)
    """Compact UTF-8 JSON of one value."""
    max_store_bytes: int = Field(default=MAX_STORE_BYTES, gt=0)
    """Compact UTF-8 JSON of the whole namespace as one object (``{"key":value,...}``)."""
    max_keys: int = Field(default=MAX_KEYS, gt=0)
