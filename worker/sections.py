"""The deployment's own sections of the configuration file (the families' are theirs).

``toolcalls.worker.config.Config`` holds them with every family's sections; each model is closed and
frozen, so a misspelt key is an error that names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolcalls.activities.capabilities import CAPABILITIES
from toolcalls.activities.catalog import (
    MAX_READ_ATTEMPTS,
)
from toolcalls.worker.payloads.settings import _env_name
from toolcalls.workflows.models.call import CapabilityPolicy, Effect
from toolcalls.workflows.rules import policy

Seconds = Annotated[float, Field(gt=0)]


def check_rule_keys(rules: Iterable[str]) -> None:
    """Refuse policy rule keys that are malformed or match no capability.

    Raises:
        ValueError: naming the bad keys.
    """
    rules = list(rules)
    bad = [key for key in rules if not policy.is_valid_rule(key)]
    if bad:
        raise ValueError(f"invalid rule keys {bad}: use a capability or a family.* prefix")
    # A misspelt rule would match nothing, so a deny written for it would silently not apply.
    unknown = [
        key
        for key in rules
        if not any(
            cap.startswith(key[:-1]) if key.endswith(".*") else cap == key for cap in CAPABILITIES
        )
    ]
    if unknown:
        raise ValueError(f"rule keys {unknown} match no capability")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TemporalSection(_Section):
    """Where the worker connects. Flags beat ``TEMPORAL_*`` variables, which beat this section,
    which beats the Temporal profile file (``temporalio.envconfig``)."""

    profile: str | None = None
    config_file: Path | None = None
    """A Temporal client configuration file (TOML profiles); default Temporal's own location."""
    address: str | None = None
    namespace: str | None = None


class WorkerSection(_Section):
    queue: str | None = None
    """The task queue this process polls; default the deployment's ``task_queue``."""
    serve_workflows: bool | None = None
    """Run ``ToolCallWorkflow``; default true when ``queue`` is the deployment's task queue."""
    serve_tools: bool = True
    """Run the enabled tools assigned to ``queue``."""
    graceful_shutdown_seconds: Seconds = 30
    max_concurrent_activities: int = Field(default=100, ge=1)
    max_cached_workflows: int = Field(default=1000, ge=0)
    """0: no cache, every workflow task replays its history; such a worker takes one workflow task
    at a time (``toolcalls.worker.plugin.UNCACHED_WORKFLOW_TASKS``)."""
    isolate_workflows: bool = False
    """Run our workflows in the sandbox re-importing their code for every workflow run (slower;
    see performance); false shares the ``toolcalls.workflows`` package between runs (and, on the
    fast path, runs our workflows outside the sandbox). The user's own workflows stay sandboxed."""
    fast_path: bool = False
    """Opt into the speed-ups that reach into SDK internals (our workflows outside the sandbox and
    on the worker's event loop), on tested ``temporalio`` versions only: for the ``toolcalls
    worker`` binary and ``ToolCallsPlugin`` alike."""


class CeilingSection(_Section):
    """The deployment's ceiling policy; a written ceiling replaces the default one entirely.

    ``default_effect`` defaults to ``require_approval`` here (not ``allow``, as in a request
    policy) so that a capability the file forgets to mention still needs a human.
    """

    rules: dict[str, Effect] = Field(default_factory=dict)
    tools: dict[str, Effect] = Field(default_factory=dict)
    default_effect: Effect = Effect.REQUIRE_APPROVAL

    @field_validator("rules")
    @classmethod
    def _rule_keys(cls, rules: dict[str, Effect]) -> dict[str, Effect]:
        check_rule_keys(rules)
        return rules

    def policy(self) -> CapabilityPolicy:
        return CapabilityPolicy(
            rules=self.rules, tools=self.tools, default_effect=self.default_effect
        )


class TimeoutsSection(_Section):
    start_to_close_seconds: Seconds
    heartbeat_seconds: Seconds | None = None


class ActivitiesSection(_Section):
    schedule_to_start_seconds: Seconds = 60
    read_attempts: int = Field(default=1, ge=1, le=MAX_READ_ATTEMPTS)
    question_timeout_seconds: Seconds = 300
    local_pure_tools: bool = True
    task_queues: dict[str, str] = Field(default_factory=dict)
    timeouts: dict[str, TimeoutsSection] = Field(default_factory=dict)


class ProfileSection(_Section):
    """``[profiles.NAME]``: the tools of one profile, by name or ``FAMILY.*``."""

    tools: list[str] = Field(min_length=1)
    description: str | None = None

    @field_validator("tools")
    @classmethod
    def _entries(cls, tools: list[str]) -> list[str]:
        twice = sorted({entry for entry in tools if tools.count(entry) > 1})
        if twice:
            raise ValueError(f"listed twice: {', '.join(twice)}")
        return tools


class DevSection(_Section):
    """The embedded dev server of ``toolcalls worker --dev`` and ``toolcalls dev``."""

    data_dir: Path = Path(".toolcalls")
    ip: str = "127.0.0.1"
    port: int = Field(default=7233, ge=1, le=65535)
    ui_port: int | None = Field(default=8233, ge=1, le=65535)
    headless: bool = False
    """Run without the web UI (TOML has no null, so a file cannot set ``ui_port`` to ``None``)."""
    namespace: str = "default"


class AttestationSection(_Section):
    """``[attestation]``: the deployment's keys, with which its own worker vouches for what its
    ``ToolCallWorkflow`` decided (plans, approvals, grants, notifications) and for the plans of
    inline calls (``ToolCalls(inline=True)``); every tool activity checks them.

    The keys are ``id=base64key`` pairs (32 random bytes each), newest first, like ``[codec]``
    keys; every worker of the deployment needs the same ones (the workflow's worker signs, the
    tools' workers verify), no application worker does. Without keys a worker makes one at first
    start in ``state_dir`` (``attestation.keys``) and keeps it: enough for workers that share one
    state directory; a deployment with workers on several machines sets the keys here.
    """

    keys_env: str | None = None
    """An environment variable holding the keys."""
    keys_file: Path | None = None
    """A file holding the keys (a mounted secret, say)."""

    @field_validator("keys_env")
    @classmethod
    def _keys_env(cls, name: str | None) -> str | None:
        return _env_name(name)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.keys_env is not None and self.keys_file is not None:
            raise ValueError("set keys_env or keys_file, not both")
        return self

    @property
    def configured(self) -> bool:
        return self.keys_env is not None or self.keys_file is not None


class InlineSection(AttestationSection):
    """``[inline]``: the former name of ``[attestation]``, still read when that has no keys."""
