"""The catalog: the enabled tools of one deployment, with their options, validated when built.

Each family declares its tools beside its code (``toolcalls.activities.family``). A ``ToolSpec``
(``toolcalls.activities.spec``) names a tool, its argument and result models, the capabilities a
call needs (a function of the validated arguments), its side-effect class and its timeouts.
``Catalog`` binds the specs to one deployment's settings: which tools are enabled, where they run,
how long a task may wait for a worker, how many attempts a read may take. Bad options fail here, at
worker start, rather than inside a running workflow where Temporal would retry the failing task
forever.

The catalog also plans calls (the ``plan`` local activity delegates here) and exports the
model-facing tool definitions, in Anthropic's, OpenAI's or MCP's shape.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple

import rfc8785
from pydantic import ValidationError

from toolcalls.activities.base import ToolArgs
from toolcalls.activities.capabilities import CAPABILITIES
from toolcalls.activities.definitions import DefinitionFormat, definition, snapshot_digest, visible
from toolcalls.activities.errors import (
    invalid_arguments,
    oversized_arguments,
    uncanonical_arguments,
)
from toolcalls.activities.limits import MAX_ARGUMENTS_BYTES
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.activities.spec_checks import (
    CatalogError as CatalogError,
    check_spec,
    check_timeouts,
)
from toolcalls.workflows.models.call import (
    ActivityPlan,
    CallPlan,
    CapabilityPolicy,
    ErrorCode,
    PlanInput,
    PlanOutcome,
    SideEffect,
    ToolError,
)
from toolcalls.workflows.rules import policy
from toolcalls.workflows.rules.approvers import ApproversSettings, resolve as approvers_for

MAX_READ_ATTEMPTS = 3
DEFAULT_SCHEDULE_TO_START = timedelta(minutes=1)
DEFAULT_QUESTION_TIMEOUT = timedelta(seconds=300)
DEFAULT_TOOLS = ("calculator", "current_datetime", "ask_user")
"""Tools enabled when the deployment does not say: the ones that need no configuration."""


@dataclass(frozen=True)
class CatalogSettings:
    """A deployment's choices about its tools."""

    enabled: Sequence[str] = DEFAULT_TOOLS
    task_queues: Mapping[str, str] = field(default_factory=dict)
    """Tool name to task queue, for tools served by other workers; default the workflow's."""
    schedule_to_start: timedelta = DEFAULT_SCHEDULE_TO_START
    read_attempts: int = 1
    """Attempts for ``read`` tools (transient errors only); at most ``MAX_READ_ATTEMPTS``."""
    question_timeout: timedelta = DEFAULT_QUESTION_TIMEOUT
    local_pure_tools: bool = True
    """Run ``pure`` tools as local activities when this worker serves them."""
    timeouts: Mapping[str, Timeouts] = field(default_factory=dict)
    """Per-tool overrides of the declared timeouts."""
    profiles: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Named subsets of the enabled tools (``[profiles.NAME]``), as tool names."""


def canonical_call(tool: str, arguments: Mapping[str, Any]) -> bytes:
    """The RFC 8785 canonical JSON of ``{"tool": ..., "arguments": ...}``."""
    return rfc8785.dumps({"tool": tool, "arguments": dict(arguments)})


def call_digest(tool: str, arguments: Mapping[str, Any]) -> str:
    """sha256 of the call's canonical JSON."""
    return hashlib.sha256(canonical_call(tool, arguments)).hexdigest()


class Planned(NamedTuple):
    """A plan's outcome and the arguments it validated (``None`` if they were not valid)."""

    outcome: PlanOutcome
    args: ToolArgs | None = None


class Catalog:
    """The enabled tools of one deployment, with validated options."""

    def __init__(
        self,
        specs: Iterable[ToolSpec],
        settings: CatalogSettings | None = None,
    ) -> None:
        self.settings = settings or CatalogSettings()
        all_specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in all_specs:
                raise CatalogError(f"tool {spec.name!r} is declared twice")
            check_spec(spec)
            all_specs[spec.name] = spec
        unknown = [name for name in self.settings.enabled if name not in all_specs]
        if unknown:
            raise CatalogError(
                f"unknown tools enabled: {', '.join(unknown)}; known: {', '.join(all_specs)}"
            )
        self._specs = {name: all_specs[name] for name in self.settings.enabled}
        self._validate_settings()
        self._options = {
            name: self._activity_options(spec)
            for name, spec in self._specs.items()
            if spec.timeouts is not None
        }
        self._digests: dict[str, str] = {}

    def _validate_settings(self) -> None:
        s = self.settings
        if not 1 <= s.read_attempts <= MAX_READ_ATTEMPTS:
            raise CatalogError(
                f"read_attempts must be 1-{MAX_READ_ATTEMPTS}, not {s.read_attempts}"
            )
        if s.schedule_to_start <= timedelta(0):
            raise CatalogError("schedule_to_start must be positive")
        if s.question_timeout <= timedelta(0):
            raise CatalogError("question_timeout must be positive")
        for name in (*s.task_queues, *s.timeouts):
            if name not in self._specs:
                raise CatalogError(f"options given for {name!r}, which is not an enabled tool")
        for name, queue in s.task_queues.items():
            if not queue.strip():
                raise CatalogError(f"{name}: task queue is empty")
            if self._specs[name].implementation is None:
                raise CatalogError(f"{name}: runs inside the workflow and has no task queue")
        for name, timeouts in s.timeouts.items():
            if self._specs[name].timeouts is None:
                raise CatalogError(f"{name}: runs inside the workflow and has no timeouts")
            check_timeouts(name, timeouts)
        for profile, names in s.profiles.items():
            missing = [name for name in names if name not in self._specs]
            if missing:
                raise CatalogError(f"profile {profile}: {', '.join(missing)} not enabled")

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Any:
        return iter(self._specs.values())

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def options(self, name: str) -> ActivityPlan:
        """The activity options of an enabled, activity-backed tool."""
        return self._options[name]

    def _activity_options(self, spec: ToolSpec) -> ActivityPlan:
        assert spec.timeouts is not None
        timeouts = self.settings.timeouts.get(spec.name, spec.timeouts)
        attempts = self.settings.read_attempts if spec.side_effect is SideEffect.READ else 1
        return ActivityPlan(
            task_queue=self.settings.task_queues.get(spec.name),
            start_to_close=timeouts.start_to_close,
            schedule_to_start=self.settings.schedule_to_start,
            heartbeat=timeouts.heartbeat,
            maximum_attempts=attempts,
        )

    def plan(
        self,
        request: PlanInput,
        ceiling: CapabilityPolicy,
        local_tools: frozenset[str],
        approvers: ApproversSettings | None = None,
        webhooks: Sequence[str] = (),
    ) -> PlanOutcome:
        """Validate a call and fix everything about it that replay must not recompute."""
        return self.plan_call(request, ceiling, local_tools, approvers, webhooks).outcome

    def plan_call(
        self,
        request: PlanInput,
        ceiling: CapabilityPolicy,
        local_tools: frozenset[str],
        approvers: ApproversSettings | None = None,
        webhooks: Sequence[str] = (),
    ) -> Planned:
        """``plan``, with the arguments it validated, for a caller that runs the tool at once
        (validating them again would parse them twice)."""
        profile = request.profile
        if profile is not None and profile not in self.settings.profiles:
            denied = _denied(f"no profile {profile[:64]!r} on this deployment")
            return Planned(PlanOutcome(error=denied))
        offered = self.settings.profiles[profile] if profile is not None else list(self._specs)
        spec = self._specs.get(request.tool)
        if spec is None or spec.name not in offered:
            # Authority-blind, as discovery is: a tool outside the profile gets the answer of one
            # the deployment does not have, so a call cannot learn what exists beyond its profile.
            # No approval can add a tool to a profile. The workflow labels the call's metrics
            # ``unknown`` for this code (``workflows/call/telemetry.py``).
            unknown = ToolError(
                code=ErrorCode.UNKNOWN_TOOL,
                message=f"unknown tool {request.tool[:64]!r}; available: {', '.join(offered)}",
            )
            return Planned(PlanOutcome(error=unknown))
        try:
            args = spec.arguments.model_validate(request.arguments)
        except ValidationError as exc:
            return Planned(PlanOutcome(error=invalid_arguments(spec.name, exc)))
        outcome = self._plan_valid(
            request, spec, args, offered, ceiling, local_tools, approvers, webhooks
        )
        return Planned(outcome, args)

    def _plan_valid(
        self,
        request: PlanInput,
        spec: ToolSpec,
        args: ToolArgs,
        offered: Sequence[str],
        ceiling: CapabilityPolicy,
        local_tools: frozenset[str],
        approvers: ApproversSettings | None,
        webhooks: Sequence[str],
    ) -> PlanOutcome:
        profile = request.profile
        arguments = args.model_dump(mode="json")
        capabilities = spec.capabilities_for(args)
        unknown = [cap for cap in capabilities if cap not in CAPABILITIES]
        if unknown:
            return PlanOutcome(
                error=ToolError(
                    code=ErrorCode.INTERNAL,
                    message=f"{spec.name}: undeclared capabilities {', '.join(unknown)}",
                )
            )
        activity: ActivityPlan | None = None
        if spec.timeouts is not None:
            activity = self._options[spec.name]
            local = (
                self.settings.local_pure_tools
                and spec.side_effect is SideEffect.PURE
                and spec.name in local_tools
                and request.task_queue is None
                and activity.task_queue is None
            )
            if local or request.task_queue is not None:
                activity = activity.model_copy(
                    update={"local": local, "task_queue": request.task_queue or activity.task_queue}
                )
        try:
            canonical = canonical_call(spec.name, arguments)
        except rfc8785.CanonicalizationError:
            # A number JSON cannot carry exactly (an integer beyond 2**53, say) is the model's to
            # fix, not an internal failure of the plan activity.
            return PlanOutcome(error=uncanonical_arguments(spec.name, arguments))
        if len(canonical) > MAX_ARGUMENTS_BYTES:
            return PlanOutcome(
                error=oversized_arguments(spec.name, arguments, len(canonical), MAX_ARGUMENTS_BYTES)
            )
        return PlanOutcome(
            plan=CallPlan(
                tool=spec.name,
                arguments=arguments,
                capabilities=capabilities,
                side_effect=spec.side_effect,
                ceiling=policy.evaluate(ceiling, spec.name, capabilities, policy.DEPLOYMENT),
                digest=hashlib.sha256(canonical).hexdigest(),
                activity=activity,
                prepare=spec.has_prepare,
                question_timeout=self.settings.question_timeout
                if spec.implementation is None
                else None,
                approval_rule=approvers_for(approvers, spec.name, capabilities),
                webhooks=list(webhooks),
                profile=profile,
                profile_digest=self.profile_digest(profile) if profile is not None else None,
                visible_tools=(
                    visible([self._specs[n] for n in offered], ceiling, request.policy)
                    if spec.sees_catalog
                    else None
                ),
            )
        )

    def definitions(
        self, format: DefinitionFormat = "anthropic", profile: str | None = None
    ) -> list[dict[str, Any]]:
        """Model-facing definitions of the enabled tools (or a profile's), in one provider's
        shape (``toolcalls.activities.definitions``)."""
        return [definition(spec, format) for spec in self.specs_of(profile)]

    def specs_of(self, profile: str | None) -> list[ToolSpec]:
        """The enabled tools, or a profile's; ``KeyError`` for a profile there is not."""
        if profile is None:
            return list(self._specs.values())
        return [self._specs[name] for name in self.settings.profiles[profile]]

    def profile_digest(self, profile: str) -> str:
        """A profile's snapshot identity (``toolcalls.activities.definitions.snapshot_digest``)."""
        if profile not in self._digests:
            self._digests[profile] = snapshot_digest(self.specs_of(profile))
        return self._digests[profile]


def _denied(message: str) -> ToolError:
    return ToolError(code=ErrorCode.POLICY_DENIED, message=message)
