"""What a deployment decides about the network tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FetchSettings(BaseModel):
    """``fetch_url``."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WebSearchSettings(BaseModel):
    """``web_search``."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class HttpToolSettings(BaseModel):
    """One configured HTTP API tool (``[[http]]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
