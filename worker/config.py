"""The deployment's configuration: a TOML file validated with pydantic.

This is the only place that reads the configuration file and ``TOOLCALLS_CONFIG``. Every error
names the key at fault (``activities.read_attempts: Input should be less than or equal to 3``)
and the file it came from.
"""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator

from toolcalls.activities.capabilities import CAPABILITIES, default_ceiling
from toolcalls.activities.catalog import DEFAULT_TOOLS, Catalog, CatalogError, CatalogSettings
from toolcalls.activities.cedar import PolicyError, PolicySet, PolicySetSettings, load_all
from toolcalls.activities.connections.settings import ConnectionsSettings
from toolcalls.activities.families import BUILTIN_FAMILIES
from toolcalls.activities.family import AnyFamily, Deployment, Family, FamilySettings, needs
from toolcalls.activities.notifications import NotificationsSettings
from toolcalls.activities.quotas.settings import MAX_QUOTAS, QuotaSettings
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.worker.chat.slack.settings import TARGET as SLACK_TARGET, SlackSection
from toolcalls.worker.inbox.settings import InboxSection, inbox_problems
from toolcalls.worker.mcp.oauth_settings import scope_problems
from toolcalls.worker.mcp.settings import McpSection
from toolcalls.worker.payloads.settings import CodecSection, PayloadsSection
from toolcalls.worker.sections import (
    ActivitiesSection,
    AttestationSection,
    CeilingSection,
    DevSection,
    InlineSection,
    ProfileSection,
    TemporalSection,
    WorkerSection,
    _Section,
)
from toolcalls.worker.telemetry.settings import LogFormat, TelemetrySection
from toolcalls.workflows.models.call import DEFAULT_TASK_QUEUE, CapabilityPolicy
from toolcalls.workflows.rules.approvers import ApproversSettings

CONFIG_ENV = "TOOLCALLS_CONFIG"

S = TypeVar("S", bound=FamilySettings)


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the file."""


class BaseConfig(_Section):
    """One deployment: its task queue, tools, ceiling, and how its workers run; ``Config`` adds
    the sections of every family."""

    task_queue: str = Field(default=DEFAULT_TASK_QUEUE, min_length=1)
    tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    log_level: str = "INFO"
    state_dir: Path = Path(".toolcalls/state")
    """Where a worker keeps what must survive it (the ledger of process groups it started)."""
    temporal: TemporalSection = Field(default_factory=TemporalSection)
    worker: WorkerSection = Field(default_factory=WorkerSection)
    ceiling: CeilingSection | None = None
    profiles: dict[str, ProfileSection] = Field(default_factory=dict)
    """Named subsets of the enabled tools a request may be held to (``profile``)."""
    approvers: ApproversSettings | None = None
    """Who may approve what; without the section anyone may decide, as one approver."""
    policies: list[PolicySetSettings] = Field(default_factory=list)
    """``[[policies]]``: Cedar policy sets evaluated at each call's plan (docs/policy.md)."""
    quotas: list[QuotaSettings] = Field(default_factory=list, max_length=MAX_QUOTAS)
    """``[[quotas]]``: limits on the calls that may execute, per principal (docs/policy.md)."""
    notifications: NotificationsSettings = Field(default_factory=NotificationsSettings)
    activities: ActivitiesSection = Field(default_factory=ActivitiesSection)
    dev: DevSection = Field(default_factory=DevSection)
    # Payloads on their way to Temporal: encryption and the codec server, the store outside
    # history (worker/payloads/settings.py).
    codec: CodecSection = Field(default_factory=CodecSection)
    payloads: PayloadsSection = Field(default_factory=PayloadsSection)
    attestation: AttestationSection = Field(default_factory=AttestationSection)
    """The deployment's keys that attest what its workflow decided (worker/sections.py)."""
    inline: InlineSection = Field(default_factory=InlineSection)
    """The former name of ``[attestation]``."""
    # What operators see: the log lines' format, the metrics and health endpoint
    # (worker/telemetry/settings.py).
    log_format: LogFormat = LogFormat.TEXT
    telemetry: TelemetrySection = Field(default_factory=TelemetrySection)
    # The MCP front, ``toolcalls mcp`` (worker/mcp/settings.py).
    mcp: McpSection = Field(default_factory=McpSection)
    # The approval inbox of `toolcalls inbox` (worker/inbox/settings.py): its accounts' groups
    # count as [approvers] groups, so the worker reads the section too.
    inbox: InboxSection = Field(default_factory=InboxSection)
    connections: ConnectionsSettings = Field(default_factory=ConnectionsSettings)
    """Per-principal OAuth connections (``toolcalls.activities.connections``)."""
    # Slack interactive approvals (worker/chat/slack/settings.py): the worker posts waiting calls
    # there, the inbox's process takes their buttons.
    slack: SlackSection | None = None

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, level: str) -> str:
        if not isinstance(logging.getLevelName(level.upper()), int):
            raise ValueError(f"unknown log level {level!r}: use DEBUG, INFO, WARNING or ERROR")
        return level.upper()

    @property
    def queue(self) -> str:
        return self.worker.queue or self.task_queue

    @property
    def serves_workflows(self) -> bool:
        serve = self.worker.serve_workflows
        return self.queue == self.task_queue if serve is None else serve

    def ceiling_policy(self) -> CapabilityPolicy:
        return self.ceiling.policy() if self.ceiling is not None else default_ceiling()

    def catalog_settings(self, profiles: Mapping[str, list[str]] | None = None) -> CatalogSettings:
        acts = self.activities
        return CatalogSettings(
            profiles=dict(profiles or {}),
            enabled=self.tools,
            task_queues=acts.task_queues,
            schedule_to_start=timedelta(seconds=acts.schedule_to_start_seconds),
            read_attempts=acts.read_attempts,
            question_timeout=timedelta(seconds=acts.question_timeout_seconds),
            local_pure_tools=acts.local_pure_tools,
            timeouts={
                name: Timeouts(
                    start_to_close=timedelta(seconds=t.start_to_close_seconds),
                    heartbeat=timedelta(seconds=t.heartbeat_seconds)
                    if t.heartbeat_seconds is not None
                    else None,
                )
                for name, t in acts.timeouts.items()
            },
        )

    def queue_tools(self, catalog: Catalog) -> list[str]:
        """The enabled activity-backed tools whose tasks go to this process's queue."""
        queues = self.activities.task_queues
        return [
            spec.name
            for spec in catalog
            if spec.implementation is not None
            and queues.get(spec.name, self.task_queue) == self.queue
        ]

    def served_tools(self, catalog: Catalog) -> list[str]:
        """The enabled activity-backed tools this process runs."""
        return self.queue_tools(catalog) if self.worker.serve_tools else []

    def family_settings(self, family: Family[S]) -> S:
        """``family``'s sections of this configuration."""
        return family.settings_from(self)

    def runs_here(self, names: Iterable[str]) -> bool:
        """Whether this process runs any of the named tools."""
        queues = self.activities.task_queues
        return self.worker.serve_tools and any(
            queues.get(name, self.task_queue) == self.queue for name in names
        )

    def start_to_close(self, spec: ToolSpec) -> float | None:
        """A tool's start-to-close in seconds, with the deployment's override."""
        override = self.activities.timeouts.get(spec.name)
        if override is not None:
            return override.start_to_close_seconds
        return spec.timeouts.start_to_close.total_seconds() if spec.timeouts else None


def config_model(families: Iterable[AnyFamily]) -> type[BaseConfig]:
    """The configuration model: the deployment's own keys and every family's sections."""
    fields: dict[str, Any] = {}
    for family in families:
        for key, info in family.settings.model_fields.items():
            if key in BaseConfig.model_fields or key in fields:
                raise ValueError(f"family {family.name}: configuration key {key!r} is taken")
            fields[key] = (info.annotation, info)
    return create_model("Config", __base__=BaseConfig, **fields)


# The file's keys are known only once the families are, so the model is built from them; to the
# type checker it is the base, whose family sections are read through ``family_settings``.
if TYPE_CHECKING:
    Config = BaseConfig
else:
    Config = config_model(BUILTIN_FAMILIES)


def config_problems(config: Config, families: Sequence[AnyFamily] = BUILTIN_FAMILIES) -> list[str]:
    """What the enabled tools need and the configuration lacks, each naming its key.

    Paths (roots, executables, databases) must exist only on hosts that run the tools using them,
    not on every host sharing the configuration file.
    """
    specs = {spec.name: spec for family in families for spec in family.tools}
    deployment = Deployment(
        enabled=frozenset(config.tools),
        declared=frozenset(specs),
        runs_here=config.runs_here,
        start_to_close=lambda name: config.start_to_close(specs[name]),
        result_bytes=config.payloads.result_bytes,
        providers=frozenset(p.name for p in config.connections.providers),
    )
    problems: list[str] = []
    for family in families:
        settings = config.family_settings(family)
        enabled = deployment.enabled_of(family.tools)
        missing = family.extra.missing() if family.extra and config.runs_here(enabled) else []
        if family.extra and missing:
            key = family.sections[0] if family.sections else family.name
            problems.append(
                f"{key}: {needs(enabled)} the {family.extra.name} extra (missing "
                f"{', '.join(missing)}): {family.extra.hint}"
            )
        problems += family.problems(settings, deployment)
    return problems


def advertised_specs(
    config: Config, families: Sequence[AnyFamily] = BUILTIN_FAMILIES
) -> tuple[ToolSpec, ...]:
    """Every family's tools as this deployment offers them (``Family.advertise``)."""
    return tuple(
        spec for family in families for spec in family.offered(config.family_settings(family))
    )


def build_catalog(
    config: Config, families: Sequence[AnyFamily] = BUILTIN_FAMILIES, source: str = "configuration"
) -> Catalog:
    """The deployment's catalog; a bad tool setting becomes a ``ConfigError`` naming its key."""
    specs = advertised_specs(config, families)
    known = [spec.name for spec in specs]
    problems = []
    unknown = [name for name in config.tools if name not in known]
    if unknown:
        problems.append(f"tools: unknown tools {', '.join(unknown)}; known: {', '.join(known)}")
    acts = config.activities
    for key, names in (("task_queues", acts.task_queues), ("timeouts", acts.timeouts)):
        problems += [
            f"activities.{key}.{name}: not an enabled tool"
            for name in names
            if name not in config.tools
        ]
    if config.ceiling is not None:
        problems += [
            f"ceiling.tools.{name}: unknown tool"
            for name in config.ceiling.tools
            if name not in known
        ]
    if config.approvers is not None:
        problems += [
            f"approvers.rules.{key}: matches no capability or tool"
            for key in config.approvers.rules
            if not _matches_something(key, known)
        ]
    profiles, wrong = resolve_profiles(config, families)
    problems += wrong
    problems += scope_problems(config.mcp.oauth, profiles)
    problems += inbox_problems(config.inbox, config.approvers)
    if config.slack is not None and any(
        webhook.name == SLACK_TARGET for webhook in config.notifications.webhooks
    ):
        problems.append(
            f"notifications.webhooks: {SLACK_TARGET!r} names the [slack] channel; "
            "name the webhook otherwise"
        )
    problems += config_problems(config, families)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))
    try:
        return Catalog(specs, config.catalog_settings(profiles))
    except CatalogError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def resolve_profiles(
    config: Config, families: Sequence[AnyFamily]
) -> tuple[dict[str, list[str]], list[str]]:
    """Each ``[profiles.NAME]`` as enabled tool names (``FAMILY.*`` is a family's enabled tools),
    and what is wrong with the entries."""
    by_family = {
        family.name: [
            spec.name
            for spec in family.offered(config.family_settings(family))
            if spec.name in config.tools
        ]
        for family in families
    }
    resolved: dict[str, list[str]] = {}
    problems = []
    for name, profile in config.profiles.items():
        tools: list[str] = []
        for entry in profile.tools:
            if entry.endswith(".*") and entry[:-2] in by_family:
                found = by_family[entry[:-2]]
            elif entry in config.tools:
                found = [entry]
            else:
                problems.append(f"profiles.{name}.tools: {entry} is not an enabled tool or family")
                continue
            tools += [tool for tool in found if tool not in tools]
        resolved[name] = tools
    return resolved, problems


def _matches_something(key: str, tools: Sequence[str]) -> bool:
    """An ``[approvers.rules]`` key names a tool, a capability or a ``family.*`` prefix."""
    if "." not in key:
        return key in tools
    if key.endswith(".*"):
        return any(cap.startswith(key[:-1]) for cap in CAPABILITIES)
    return key in CAPABILITIES


def parse_config(data: Mapping[str, object], source: str = "configuration") -> Config:
    """Validate ``data``; the error names every bad key."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            key = ".".join(str(part) for part in err["loc"]) or "(top level)"
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown key" + _suggestion(err["loc"])
            problems.append(f"{key}: {message}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from None


def _suggestion(loc: tuple[int | str, ...]) -> str:
    """``"; did you mean 'files'?"`` for a misspelt key, when a valid key is near enough."""
    node: Any = Config
    for part in loc[:-1]:
        node = _child(node, part)
    node = _unwrap(node)
    if not (isinstance(node, type) and issubclass(node, BaseModel)):
        return ""
    near = difflib.get_close_matches(str(loc[-1]), list(node.model_fields), n=1, cutoff=0.6)
    return f"; did you mean {near[0]!r}?" if near else ""


def _child(node: Any, part: int | str) -> Any:
    """What validates ``node[part]``: a model's field, an array's or a table's items."""
    node = _unwrap(node)
    if isinstance(node, type) and issubclass(node, BaseModel):
        info = node.model_fields.get(str(part))
        return info.annotation if info is not None else None
    origin, args = get_origin(node), get_args(node)
    if origin in (list, tuple) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _unwrap(node: Any) -> Any:
    """``X`` out of ``X | None``."""
    args = [arg for arg in get_args(node) if arg is not type(None)]
    return args[0] if get_origin(node) in (Union, UnionType) and len(args) == 1 else node


def policy_sets(config: BaseConfig) -> list[PolicySet]:
    """The deployment's ``[[policies]]`` sets, parsed and validated; a problem (with its file,
    line and column) is a ``ConfigError``."""
    try:
        return load_all(config.policies)
    except PolicyError as exc:
        raise ConfigError(str(exc)) from None


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Load ``path``, else ``$TOOLCALLS_CONFIG``, else the defaults."""
    env = os.environ if env is None else env
    chosen = path or env.get(CONFIG_ENV)
    if not chosen:
        return Config()
    file = Path(chosen)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: not UTF-8 at byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    config = parse_config(data, str(file))
    build_catalog(config, source=str(file))
    return config
