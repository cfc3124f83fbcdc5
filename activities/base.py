"""What every tool family shares: the argument base model and the per-call context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from toolcalls.workflows.models.approval import ApprovalRecord


class ToolArgs(BaseModel):
    """Base of every tool's argument model: closed, immutable, and ``null`` means the default.

    The strict model-facing schema makes every property required and defaulted ones nullable, so a
    model that wants the default sends ``null``; here that ``null`` becomes the default again.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            key: value
            for key, value in data.items()
            if not (
                value is None
                and key in fields
                and not fields[key].is_required()
                and fields[key].get_default(call_default_factory=True) is not None
            )
        }


class ToolResult(BaseModel):
    """Base of every tool's result model."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class CallContext:
    """What a tool may know about the call it serves, beyond its arguments."""

    workflow_id: str
    call_id: str
    idempotency_key: str
    approval: ApprovalRecord | None
    precondition: dict[str, Any] | None
    visible_tools: list[str] | None = None
    """For a discovery tool: the tools this call may use, from its plan."""
    principal: str | None = None
    """For a connection-backed tool: whose connection it acts through (attested)."""
