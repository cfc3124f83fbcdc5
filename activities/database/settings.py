"""What a deployment decides about the database tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class DatabaseSettings(BaseModel):
    """``database_schema`` and ``query_database``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
