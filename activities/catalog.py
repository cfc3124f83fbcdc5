"""The catalog: the enabled tools of one deployment, with their options, validated when built.

Each family declares its tools beside its code (``activities.family``). A ``ToolSpec`` names a
tool, its argument and result models, the capabilities a call needs (a function of the validated
arguments), its side-effect class and its timeouts. ``Catalog`` binds the specs to one
deployment's settings: which tools are enabled, where they run, how long a task may wait for a
worker, how many attempts a read may take. Bad options fail here, at worker start, rather than
inside a running workflow where Temporal would retry the failing task forever.

The catalog also plans calls (the ``plan`` local activity delegates here) and exports the
model-facing tool definitions, in Anthropic's, OpenAI's or MCP's shape.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, get_args

import rfc8785
from pydantic import BaseModel, ValidationError

from activities.base import ToolArgs
from activities.capabilities import CAPABILITIES
from activities.errors import invalid_arguments, oversized_arguments, uncanonical_arguments
from activities.schema import strict_schema
from workflows import policy
from workflows.approvers import ApproversSettings, resolve as approvers_for
from workflows.models import (
    ActivityPlan,
    CallPlan,
    CapabilityPolicy,
    ErrorCode,
    PlanInput,
    PlanOutcome,
    SideEffect,
    ToolError,
)

MAX_READ_ATTEMPTS = 3
DEFAULT_SCHEDULE_TO_START = timedelta(minutes=1)
DEFAULT_QUESTION_TIMEOUT = timedelta(seconds=300)
HEARTBEAT_REQUIRED_AFTER = timedelta(seconds=10)
"""A tool allowed to run longer than this must heartbeat, or cancellation never reaches it."""
MAX_PAYLOAD_BYTES = 1024 * 1024
"""No activity result over this leaves a worker (Temporal rejects 2 MiB), unless the deployment
stores large payloads outside history (``[payloads]``), which raises the limit."""
MAX_STORED_RESULT_BYTES = 64 * 1024 * 1024
"""The most a deployment's result limit may be with a payload store (``[payloads]
max_result_bytes``): a worker holds a few copies of a result while it converts, encrypts and
stores it."""
RESULT_ENVELOPE_BYTES = MAX_PAYLOAD_BYTES - 1_000_000
"""What a tool that cuts its own output keeps back from the result limit for the rest of its
result: 1 MiB less this is the 1,000,000 bytes the tools cut their output to by default."""
MAX_ARGUMENTS_BYTES = MAX_PAYLOAD_BYTES + 64 * 1024
"""The canonical JSON of one call's arguments. The workflow carries them in several payloads
(the plan, the activity input, the pending approval's memo beside a bounded preview), each under
Temporal's 2 MB limit, so the sum of per-argument limits (two 1 MiB texts of ``edit_file``) is
refused here, at plan, before anything is asked or run."""


def output_bytes(result_bytes: int) -> int:
    """The bytes a tool may give its output when its result may reach ``result_bytes``."""
    return result_bytes - RESULT_ENVELOPE_BYTES


_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")

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

    def capabilities_for(self, args: ToolArgs) -> list[str]:
        """The capabilities this particular call needs."""
        caps = self.capabilities(args) if callable(self.capabilities) else self.capabilities
        return sorted(set(caps))

    @property
    def has_prepare(self) -> bool:
        return self.implementation is not None and hasattr(
            self.implementation, f"prepare_{self.name}"
        )


DefinitionFormat = Literal["anthropic", "openai", "mcp"]
"""The shapes ``Catalog.definitions`` exports tool definitions in."""
DEFINITION_FORMATS: tuple[DefinitionFormat, ...] = get_args(DefinitionFormat)

DEFAULT_TOOLS = ("calculator", "current_datetime", "ask_user")
"""Tools enabled when the deployment does not say: the ones that need no configuration."""


class CatalogError(ValueError):
    """The catalog or its settings are invalid; the message names the tool and the option."""


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


def canonical_call(tool: str, arguments: Mapping[str, Any]) -> bytes:
    """The RFC 8785 canonical JSON of ``{"tool": ..., "arguments": ...}``."""
    return rfc8785.dumps({"tool": tool, "arguments": dict(arguments)})


def call_digest(tool: str, arguments: Mapping[str, Any]) -> str:
    """sha256 of the call's canonical JSON."""
    return hashlib.sha256(canonical_call(tool, arguments)).hexdigest()


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
            _validate_spec(spec)
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
            _validate_timeouts(name, timeouts)

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
        spec = self._specs.get(request.tool)
        if spec is None:
            return PlanOutcome(
                error=ToolError(
                    code=ErrorCode.UNKNOWN_TOOL,
                    message=(
                        f"unknown tool {request.tool[:64]!r}; available: {', '.join(self._specs)}"
                    ),
                )
            )
        try:
            args = spec.arguments.model_validate(request.arguments)
        except ValidationError as exc:
            return PlanOutcome(error=invalid_arguments(spec.name, exc))
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
            )
        )

    def definitions(self, format: DefinitionFormat = "anthropic") -> list[dict[str, Any]]:
        """Model-facing definitions of every enabled tool, in one provider's shape.

        ``anthropic``: ``name``, ``description``, ``input_schema`` (the default, and what
        ``toolcalls tools --json`` prints); ``openai``: a strict function tool, ``type``, ``name``,
        ``description``, ``parameters``, ``strict``; ``mcp``: an MCP tool, ``name``,
        ``description``, ``inputSchema``. The schema is the same strict one in each.
        """
        if format not in DEFINITION_FORMATS:
            raise ValueError(
                f"unknown definition format {format!r}; one of {', '.join(DEFINITION_FORMATS)}"
            )
        return [
            _definition(format, spec.name, spec.description, strict_schema(spec.arguments))
            for spec in self._specs.values()
        ]


def _definition(
    format: DefinitionFormat, name: str, description: str, schema: dict[str, Any]
) -> dict[str, Any]:
    if format == "openai":
        return {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": schema,
            "strict": True,
        }
    key = "inputSchema" if format == "mcp" else "input_schema"
    return {"name": name, "description": description, key: schema}


def _nested_models(annotation: Any, seen: set[type[BaseModel]]) -> Iterator[type[BaseModel]]:
    """Every model reachable from ``annotation`` (through lists, unions, ...), once."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        yield annotation
        for info in annotation.model_fields.values():
            yield from _nested_models(info.annotation, seen)
    for arg in get_args(annotation):
        yield from _nested_models(arg, seen)


def _validate_spec(spec: ToolSpec) -> None:
    if not _TOOL_NAME.fullmatch(spec.name):
        raise CatalogError(f"tool name {spec.name!r} must match {_TOOL_NAME.pattern}")
    if not spec.description.strip():
        raise CatalogError(f"{spec.name}: description is empty")
    if not callable(spec.capabilities):
        unknown = [cap for cap in spec.capabilities if cap not in CAPABILITIES]
        if unknown:
            raise CatalogError(f"{spec.name}: unknown capabilities {', '.join(unknown)}")
    impl = spec.implementation
    if (impl is None) != (spec.timeouts is None):
        raise CatalogError(
            f"{spec.name}: an activity-backed tool needs both implementation and timeouts"
        )
    if impl is not None and not callable(getattr(impl, spec.name, None)):
        raise CatalogError(f"{spec.name}: {impl.__name__} has no method {spec.name!r}")
    if spec.timeouts is not None:
        _validate_timeouts(spec.name, spec.timeouts)
    try:
        strict_schema(spec.arguments)
    except ValueError as exc:
        raise CatalogError(f"{spec.name}: arguments have no strict schema: {exc}") from None
    # The strict schema makes every defaulted property nullable, at any depth; only ToolArgs
    # turns that null back into the default, so a nested plain model would refuse it.
    for model in _nested_models(spec.arguments, set()):
        defaulted = [name for name, info in model.model_fields.items() if not info.is_required()]
        if defaulted and not issubclass(model, ToolArgs):
            raise CatalogError(
                f"{spec.name}: nested argument model {model.__name__} has defaults "
                f"({', '.join(defaulted)}) and must subclass ToolArgs, so null means the default"
            )


def _validate_timeouts(name: str, timeouts: Timeouts) -> None:
    if timeouts.start_to_close <= timedelta(0):
        raise CatalogError(f"{name}: start_to_close must be positive")
    heartbeat = timeouts.heartbeat
    if heartbeat is not None and not timedelta(0) < heartbeat < timeouts.start_to_close:
        raise CatalogError(f"{name}: heartbeat must be positive and shorter than start_to_close")
    if heartbeat is None and timeouts.start_to_close > HEARTBEAT_REQUIRED_AFTER:
        raise CatalogError(
            f"{name}: start_to_close over {HEARTBEAT_REQUIRED_AFTER.total_seconds():g}s "
            "needs a heartbeat timeout"
        )
