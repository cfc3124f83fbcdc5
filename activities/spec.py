"""A tool's declaration: ``ToolSpec``, and the ``Timeouts`` of one attempt.

Each family declares its tools beside their code (``toolcalls.activities.family``) with these;
the catalog (``toolcalls.activities.catalog``) checks them (``toolcalls.activities.spec_checks``)
and binds them to a deployment. Kept apart from the catalog so that the checks and the model-facing
definitions (``toolcalls.activities.definitions``), which the catalog uses, can name the types
without importing the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from toolcalls.activities.base import ToolArgs
from toolcalls.workflows.models.call import SideEffect

Capabilities = Sequence[str] | Callable[[Any], Sequence[str]]


@dataclass(frozen=True)
class Timeouts:
    """How long one attempt may run and how often it must heartbeat."""

    start_to_close: timedelta
    heartbeat: timedelta | None = None


@dataclass(frozen=True)
class ToolSpec:
    """One tool, declared once.

    ``implementation`` is the class whose method named after the tool executes it (and whose
    ``prepare_<tool>`` method, if any, builds its approval preview); ``None`` means the workflow
    itself runs the tool (``ask_user``). The tool's family builds its instance.
    """

    name: str
    description: str
    arguments: type[ToolArgs]
    result: type[BaseModel]
    side_effect: SideEffect
    capabilities: Capabilities
    timeouts: Timeouts | None
    implementation: type | None
    capability_sets: tuple[tuple[str, ...], ...] = ()
    """For capabilities that depend on the arguments: every set a call can need (``git``: status
    needs ``git.read``, commit ``git.write``), so discovery can tell a tool no call may use."""
    sees_catalog: bool = False
    connection: str | None = None
    """The provider (``google``, ``microsoft``) whose per-principal connection the tool acts
    through, as the deployment configures it (``toolcalls.activities.connections``)."""
    """The tool looks at the other tools (discovery): the plan gives it the ones this call may
    use (``CallPlan.visible_tools``)."""

    def capabilities_for(self, args: ToolArgs) -> list[str]:
        """The capabilities this particular call needs."""
        caps = self.capabilities(args) if callable(self.capabilities) else self.capabilities
        return sorted(set(caps))

    @property
    def has_prepare(self) -> bool:
        return self.implementation is not None and hasattr(
            self.implementation, f"prepare_{self.name}"
        )
