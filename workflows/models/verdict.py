"""What one ``[[policies]]`` set (Cedar) decided about one call, as the plan recorded it.

The plan evaluates each set once and records its verdict in history; the workflow combines an
enforced set's verdict with the capability policies (``toolcalls.workflows.rules.policy``) and
leaves a shadow set's in the record only.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_VERDICT_IDS = 32
MAX_VERDICT_ERRORS = 4


class PolicyMode(StrEnum):
    """Whether a policy set's decision counts (``enforce``) or is only recorded (``shadow``)."""

    ENFORCE = "enforce"
    SHADOW = "shadow"


class PolicyVerdict(BaseModel):
    """One policy set's decision on one call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The set's ``name`` in ``[[policies]]``."""
    mode: PolicyMode
    effect: Literal["allow", "require_approval", "deny"]
    """``deny`` for a ``forbid``, no ``permit`` or an evaluation error; ``require_approval`` for
    a ``permit`` annotated ``@approval("required")`` or ``@approvers(...)``."""
    policies: list[str] = Field(default_factory=list, max_length=MAX_VERDICT_IDS)
    """The ids of the policies that decided (``@id`` annotations, else ``policy0``, ...)."""
    approvers: list[str] = Field(default_factory=list, max_length=MAX_VERDICT_IDS)
    """Approver groups the deciding policies named (``@approvers("ops")``)."""
    errors: list[str] = Field(default_factory=list, max_length=MAX_VERDICT_ERRORS)

    def reason(self) -> str:
        """One line for a person: which set decided what, and by which policies."""
        if self.errors:
            why = f"evaluation error: {self.errors[0]}"
        elif self.policies:
            why = f"policies {', '.join(self.policies)}"
        else:
            why = "no policy permits it"
        return f"policy set {self.name}: {self.effect} ({why})"
