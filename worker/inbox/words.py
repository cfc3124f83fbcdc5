"""The inbox's words for what the records say in code: why a call waits, who asked for it, and a
workflow id short enough to read.

Pure functions over strings the workflow recorded; a string of a shape they do not know is shown
as it is. The templates autoescape what these return, like everything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_REASON = re.compile(
    r"^(?P<subject>.+?): (?P<effect>allow|require_approval|deny) "
    r"\((?P<source>deployment|request)(?: rule (?P<rule>.+))?\)$"
)
"""A reason as the policy records it (``toolcalls.workflows.rules.policy.Decision.reasons``):
``tool:calculator: require_approval (request rule tool:calculator)``."""
_EFFECTS = {
    "require_approval": ("needs an approval", "asks for one"),
    "deny": ("is refused", "refuses it"),
    "allow": ("is allowed", "allows it"),
}
_SOURCES = {"deployment": "the deployment's", "request": "the caller's"}
_HEX_TAIL = re.compile(r"^(?P<prefix>.*?)(?P<hex>[0-9a-f]{64})$")
SHORT_HEX = 8
"""Hex digits a long hex id keeps in its short form (the full id is a click away)."""
MAX_SHOWN_NAME = 100
"""An MCP client's name (the client's own, unchecked) is cut to this on the page."""


@dataclass(frozen=True)
class Reason:
    """Why a call waits, in words, and the rule as the policy recorded it."""

    text: str
    rule: str


def reason(recorded: str) -> Reason:
    """``calculator needs an approval: the deployment's rule for this tool asks for one.``"""
    match = _REASON.match(recorded)
    if match is None:
        return Reason(recorded, recorded)
    subject, rule, source = match["subject"], match["rule"], match["source"]
    needs, asks = _EFFECTS[match["effect"]]
    if subject.startswith("tool:"):
        what = f"{subject.removeprefix('tool:')} {needs}"
    else:
        what = f"It uses {subject}, which {needs}"
    whose = _SOURCES[source]
    if rule is None:
        why = f"{whose} policy {asks}"
    elif rule == subject:
        why = f"{whose} rule for this {'tool' if rule.startswith('tool:') else 'capability'} {asks}"
    elif rule == "default":
        why = f"{whose} default rule {asks}"
    else:
        why = f"{whose} rule for {rule} {asks}"
    return Reason(f"{what}: {why}.", recorded)


def asked_by(parent_id: str | None, metadata: Mapping[str, str]) -> str:
    """Who asked for the call: the MCP client and its user, the parent workflow, or ``-``."""
    if metadata.get("front") == "mcp":
        client = _shown(metadata.get("mcp_client", ""))
        user = _shown(metadata.get("mcp_user", ""))
        named = f"MCP client {client}" if client else "an MCP client"
        return f"{named} as {user}" if user else f"{named} (no user named)"
    return parent_id or "-"


def _shown(name: str) -> str:
    name = " ".join(name.split())
    return name if len(name) <= MAX_SHOWN_NAME else name[: MAX_SHOWN_NAME - 1] + "…"


def short_id(workflow_id: str) -> str:
    """A workflow id ending in 64 hex digits (an MCP call's) with the first few of them only;
    any other id as it is."""
    match = _HEX_TAIL.match(workflow_id)
    if match is None:
        return workflow_id
    return f"{match['prefix']}{match['hex'][:SHORT_HEX]}…"
