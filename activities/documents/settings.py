"""What a deployment decides about the document tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class DocumentSettings(BaseModel):
    """``read_document`` and ``search_document``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
