"""``[[policies]]``: the deployment's Cedar policy sets (pure settings, no I/O)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolcalls.workflows.models.verdict import PolicyMode

MAX_POLICY_FILES = 64


class PolicySetSettings(BaseModel):
    """One policy set: Cedar files, an optional schema, and whether it is enforced."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default="cedar", pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    files: list[Path] = Field(min_length=1, max_length=MAX_POLICY_FILES)
    """Cedar policy files (``.cedar``), read in order as one set."""
    schema_file: Path | None = Field(default=None, alias="schema")
    """A Cedar schema (``.cedarschema``, or JSON for ``.json``) the policies must validate
    against."""
    mode: PolicyMode = PolicyMode.ENFORCE
