"""Whom a call acts for: ``Principal``, an id and a few string attributes.

A request may name its principal (``ToolCallRequest.principal``); the plan records it, policies
(``[[policies]]``, Cedar) decide on it, standing grants are bound to it, and the inbox and the CLI
show it. It is a claim, not a proof: anyone who may start workflows in the namespace may claim any
principal, so a deployment that needs more restricts who may start calls. The MCP front's
principal comes from the token it verified (``oauth:<issuer>#<subject>``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_PRINCIPAL_ID_CHARS = 200
MAX_ATTRIBUTES = 16
MAX_ATTRIBUTE_NAME_CHARS = 64
MAX_ATTRIBUTE_VALUE_CHARS = 256

_ATTRIBUTE_NAME = re.compile(r"[a-z][a-z0-9_]*")


class Principal(BaseModel):
    """Whom a call acts for: an ``id`` (``alice``, ``oauth:https://idp#123``) and attributes
    such as ``tenant`` or ``roles``, all strings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=MAX_PRINCIPAL_ID_CHARS)
    attributes: dict[str, str] = Field(default_factory=dict, max_length=MAX_ATTRIBUTES)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if value != value.strip() or not value.isprintable():
            raise ValueError("a principal id is printable with no surrounding spaces")
        return value

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, attributes: dict[str, str]) -> dict[str, str]:
        for name, value in attributes.items():
            if len(name) > MAX_ATTRIBUTE_NAME_CHARS or not _ATTRIBUTE_NAME.fullmatch(name):
                raise ValueError(
                    f"attribute name {name[:MAX_ATTRIBUTE_NAME_CHARS]!r}: lowercase letters, "
                    "digits and _, starting with a letter"
                )
            if len(value) > MAX_ATTRIBUTE_VALUE_CHARS or not value.isprintable():
                raise ValueError(
                    f"attribute {name}: printable, at most {MAX_ATTRIBUTE_VALUE_CHARS} characters"
                )
        return attributes


def principal_id(principal: Principal | None) -> str | None:
    """The id of ``principal``, the only part telemetry exports."""
    return principal.id if principal is not None else None
