"""Wire models of the ``toolcalls.definitions`` activity: the model-facing definitions of a
profile's tools (or of every enabled tool), in one provider's shape."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DefinitionsRequest(_Model):
    """What ``DEFINITIONS_ACTIVITY`` is asked for: a profile's (or every enabled tool's)
    definitions in one provider's shape."""

    profile: str | None = None
    format: str = "anthropic"


class Definitions(_Model):
    """Model-facing definitions, and the profile's snapshot identity."""

    profile: str | None
    digest: str | None
    definitions: list[dict[str, Any]]
