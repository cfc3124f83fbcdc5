"""What a model sees of the tools: definitions in each provider's shape, the snapshot identity of
a set of them, and which tools a call may see (its profile, its policy and the ceiling).

A profile (``[profiles.NAME]``) is a fixed subset of the enabled tools. Its snapshot identity is
the sha256 of the RFC 8785 JSON of its tools' definitions, so a result can be tied to the
definitions the model was given and any change to a name, a description or a schema shows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_args

import rfc8785

from toolcalls.activities.schema import strict_schema
from toolcalls.activities.spec import ToolSpec
from toolcalls.workflows.models.call import CapabilityPolicy, Effect
from toolcalls.workflows.rules import policy

DefinitionFormat = Literal["anthropic", "openai", "mcp"]
DEFINITION_FORMATS: tuple[DefinitionFormat, ...] = get_args(DefinitionFormat)


def definition(spec: ToolSpec, format: DefinitionFormat = "anthropic") -> dict[str, Any]:
    """One tool's model-facing definition.

    ``anthropic``: ``name``, ``description``, ``input_schema``; ``openai``: a strict function
    tool, ``type``, ``name``, ``description``, ``parameters``, ``strict``; ``mcp``: an MCP tool,
    ``name``, ``description``, ``inputSchema``. The schema is the same strict one in each.
    """
    if format not in DEFINITION_FORMATS:
        raise ValueError(
            f"unknown definition format {format!r}; one of {', '.join(DEFINITION_FORMATS)}"
        )
    schema = strict_schema(spec.arguments)
    if format == "openai":
        return {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": schema,
            "strict": True,
        }
    key = "inputSchema" if format == "mcp" else "input_schema"
    return {"name": spec.name, "description": spec.description, key: schema}


def snapshot_digest(specs: Iterable[ToolSpec]) -> str:
    """The snapshot identity of a set of tools: sha256 of their definitions' canonical JSON."""
    return hashlib.sha256(rfc8785.dumps([definition(spec) for spec in specs])).hexdigest()


def summary(spec: ToolSpec) -> str:
    """The first sentence of a tool's description."""
    text = spec.description.strip()
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def denied(spec: ToolSpec, verdicts: Sequence[Any], request: CapabilityPolicy | None) -> bool:
    """Whether every call of ``spec`` is denied by the ceiling's ``verdicts`` (``evaluate`` of
    the tool with each capability set it can need) and the request's policy."""
    for capabilities in capability_sets(spec):
        ceiling = [v for v in verdicts if v.subject in (*capabilities, f"tool:{spec.name}")]
        decision = policy.decide(ceiling, request, spec.name, capabilities)
        if decision.effect is not Effect.DENY:
            return False
    return True


def capability_sets(spec: ToolSpec) -> tuple[tuple[str, ...], ...]:
    """The sets of capabilities calls of ``spec`` can need: its own, or what it declares."""
    if spec.capability_sets:
        return spec.capability_sets
    caps = () if callable(spec.capabilities) else tuple(spec.capabilities)
    return (caps,)


def visible(
    specs: Iterable[ToolSpec], ceiling: CapabilityPolicy, request: CapabilityPolicy | None
) -> list[str]:
    """The tools among ``specs`` that some call could use under the ceiling and the request's
    policy, in order."""
    found = []
    for spec in specs:
        every = sorted({cap for caps in capability_sets(spec) for cap in caps})
        verdicts = policy.evaluate(ceiling, spec.name, every, policy.DEPLOYMENT)
        if not denied(spec, verdicts, request):
            found.append(spec.name)
    return found
