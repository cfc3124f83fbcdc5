"""The deployment's configuration: a TOML file validated with pydantic.

This is the only place that reads the configuration file and ``TOOLCALLS_CONFIG``. Every error
names the key at fault (``activities.read_attempts: Input should be less than or equal to 3``)
and the file it came from.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from activities.catalog import (
    BUILTIN_TOOLS,
    CAPABILITIES,
    DATABASE_TOOLS,
    DEFAULT_TOOLS,
    DOCUMENT_TOOLS,
    FILE_TOOLS,
    MAX_READ_ATTEMPTS,
    PROCESS_TOOLS,
    STORAGE_TOOLS,
    Catalog,
    CatalogError,
    CatalogSettings,
    Timeouts,
    ToolSpec,
    default_ceiling,
)
from activities.database.settings import DatabaseSettings
from activities.documents.settings import DocumentSettings
from activities.documents.tools import EXTRA_HINT as DOCUMENTS_EXTRA_HINT
from activities.documents.tools import PARSER_REPORT_MARGIN
from activities.documents.tools import missing_extra as missing_document_parsers
from activities.files.settings import FilesSettings
from activities.files.writing import FileWriteTools
from activities.network.http_api import http_tool_spec
from activities.network.settings import FetchSettings, HttpToolSettings, WebSearchSettings
from activities.processes.git import READ_ONLY_DESCRIPTION as GIT_READ_ONLY_DESCRIPTION
from activities.processes.git import GitArgs, GitReadArgs
from activities.processes.git import settings_problems as git_settings_problems
from activities.processes.resolve import config_problems as command_config_problems
from activities.processes.settings import GitSettings, ProcessSettings, ShellSettings
from activities.storage.settings import StorageSettings
from workflows import policy
from workflows.models import DEFAULT_TASK_QUEUE, CapabilityPolicy, Effect, SideEffect

CONFIG_ENV = "TOOLCALLS_CONFIG"

Seconds = Annotated[float, Field(gt=0)]


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the file."""


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
    isolate_workflows: bool = False
    """Re-import the workflow code in the sandbox for every workflow (slower; see performance)."""


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


class DevSection(_Section):
    """The embedded dev server of ``toolcalls worker --dev`` and ``toolcalls dev``."""

    data_dir: Path = Path(".toolcalls")
    ip: str = "127.0.0.1"
    port: int = Field(default=7233, ge=1, le=65535)
    ui_port: int | None = Field(default=8233, ge=1, le=65535)
    headless: bool = False
    """Run without the web UI (TOML has no null, so a file cannot set ``ui_port`` to ``None``)."""
    namespace: str = "default"


class Config(_Section):
    """One deployment: its task queue, tools, ceiling, and how its workers run."""

    task_queue: str = Field(default=DEFAULT_TASK_QUEUE, min_length=1)
    tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    log_level: str = "INFO"
    state_dir: Path = Path(".toolcalls/state")
    """Where a worker keeps what must survive it (the ledger of process groups it started)."""
    process: ProcessSettings = Field(default_factory=ProcessSettings)
    shell: ShellSettings = Field(default_factory=ShellSettings)
    git: GitSettings = Field(default_factory=GitSettings)
    files: FilesSettings = Field(default_factory=FilesSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    fetch: FetchSettings = Field(default_factory=FetchSettings)
    web_search: WebSearchSettings = Field(default_factory=WebSearchSettings)
    http: list[HttpToolSettings] = Field(default_factory=list)
    """Configured HTTP API tools, one ``[[http]]`` table each."""
    documents: DocumentSettings = Field(default_factory=DocumentSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    temporal: TemporalSection = Field(default_factory=TemporalSection)
    worker: WorkerSection = Field(default_factory=WorkerSection)
    ceiling: CeilingSection | None = None
    activities: ActivitiesSection = Field(default_factory=ActivitiesSection)
    dev: DevSection = Field(default_factory=DevSection)

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

    def catalog_settings(self) -> CatalogSettings:
        acts = self.activities
        return CatalogSettings(
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
            if spec.family is not None and queues.get(spec.name, self.task_queue) == self.queue
        ]

    def served_tools(self, catalog: Catalog) -> list[str]:
        """The enabled activity-backed tools this process runs."""
        return self.queue_tools(catalog) if self.worker.serve_tools else []


def config_problems(config: Config) -> list[str]:
    """What the enabled tools need and the configuration lacks, each naming its key.

    Paths (roots, executables, databases) must exist only on hosts that run the tools using them,
    not on every host sharing the configuration file.
    """
    enabled = set(config.tools)
    problems: list[str] = []

    def runs_here(names: Iterable[str]) -> bool:
        queues = config.activities.task_queues
        return config.worker.serve_tools and any(
            queues.get(name, config.task_queue) == config.queue for name in names
        )

    def start_to_close(spec: ToolSpec) -> float | None:
        """The tool's start-to-close in seconds, with the deployment's override."""
        override = config.activities.timeouts.get(spec.name)
        if override is not None:
            return override.start_to_close_seconds
        return spec.timeouts.start_to_close.total_seconds() if spec.timeouts else None

    def roots_problems(section: str, roots: list[Path], tools: list[str]) -> list[str]:
        needs = "needs" if len(tools) == 1 else "need"
        found = [] if roots else [f"{section}: {', '.join(tools)} {needs} at least one root"]
        here = runs_here(tools)
        for index, root in enumerate(roots):
            if not root.is_absolute():
                found.append(f"{section}.{index}: {root} is not an absolute path")
            elif here and not root.is_dir():
                found.append(f"{section}.{index}: {root} is not an existing directory")
        return found

    # execute_command, run_shell: roots, the shell, and limits that fit the activity timeout.
    problems += command_config_problems(
        config.process,
        config.shell,
        enabled,
        served={spec.name for spec in PROCESS_TOOLS if runs_here([spec.name])},
        start_to_close={
            spec.name: seconds
            for spec in PROCESS_TOOLS
            if (seconds := start_to_close(spec)) is not None
        },
    )
    if "git" in enabled:
        problems += git_settings_problems(config.git, on_this_host=runs_here(["git"]))
    file_tools = [spec.name for spec in FILE_TOOLS if spec.name in enabled]
    if file_tools:
        problems += roots_problems("files.roots", config.files.roots, file_tools)
    # create_file ... restore_change: writes exist only with a checkpoint store, and the store
    # (which holds the original bytes of every file changed) stays out of the model's reach.
    write_tools = [
        spec.name for spec in FILE_TOOLS if spec.family is FileWriteTools and spec.name in enabled
    ]
    store = config.files.checkpoints
    if write_tools and store is None:
        needs = "needs" if len(write_tools) == 1 else "need"
        problems.append(f"files.checkpoints: {', '.join(write_tools)} {needs} a checkpoint store")
    elif write_tools and store is not None:
        where = Path(os.path.realpath(store))
        for index, root in enumerate(config.files.roots):
            if root.is_absolute() and where.is_relative_to(os.path.realpath(root)):
                problems.append(
                    f"files.checkpoints: {store} is inside files.roots.{index} ({root}); "
                    "keep the recovery records where the file tools cannot reach them"
                )
    storage_tools = [spec.name for spec in STORAGE_TOOLS if spec.name in enabled]
    problems += [
        f"storage.allow_write: {spec.name} needs it"
        for spec in STORAGE_TOOLS
        if spec.name in enabled
        and spec.side_effect is SideEffect.WRITE
        and not config.storage.allow_write
    ]
    database = config.storage.database
    if storage_tools and database is not None:
        storage_here = runs_here(storage_tools)
        if not database.is_absolute():
            problems.append(f"storage.database: {database} is not an absolute path")
        elif storage_here and not database.parent.is_dir():
            problems.append(f"storage.database: directory {database.parent} does not exist")
        elif storage_here and database.is_dir():
            problems.append(f"storage.database: {database} is a directory")
    # fetch_url and web_search need nothing at start: the Brave key is read from the worker's
    # environment when a Brave search runs, never from configuration.
    problems += _http_problems(config, enabled)
    # read_document, search_document: roots as for the file tools, the documents extra on hosts
    # that parse, and a parser timeout that leaves the activity time to kill it and report.
    document_tools = [spec.name for spec in DOCUMENT_TOOLS if spec.name in enabled]
    if document_tools:
        docs = config.documents
        problems += roots_problems("documents.roots", docs.roots, document_tools)
        missing = missing_document_parsers() if runs_here(document_tools) else []
        if missing:
            needs = "needs" if len(document_tools) == 1 else "need"
            problems.append(
                f"documents: {', '.join(document_tools)} {needs} the documents extra (missing "
                f"{', '.join(missing)}): {DOCUMENTS_EXTRA_HINT}"
            )
        for spec in DOCUMENT_TOOLS:
            limit = start_to_close(spec)
            if (
                spec.name in document_tools
                and limit is not None
                and docs.timeout_seconds + PARSER_REPORT_MARGIN > limit
            ):
                problems.append(
                    f"documents.timeout_seconds: {docs.timeout_seconds:g} s leaves {spec.name} "
                    f"less than {PARSER_REPORT_MARGIN:g} s of its {limit:g} s start_to_close to "
                    "stop the parser and report"
                )
    # database_schema, query_database: one existing SQLite file (never created), and a query
    # deadline that ends inside the activity's start-to-close so the tool reports it itself.
    database_tools = [spec.name for spec in DATABASE_TOOLS if spec.name in enabled]
    if database_tools:
        db = config.database
        needs = "needs" if len(database_tools) == 1 else "need"
        if db.path is None:
            problems.append(f"database.path: {', '.join(database_tools)} {needs} a SQLite file")
        elif not db.path.is_absolute():
            problems.append(f"database.path: {db.path} is not an absolute path")
        elif runs_here(database_tools):
            if db.path.is_symlink():
                problems.append(f"database.path: {db.path} is a symlink; give the file itself")
            elif not db.path.is_file():
                problems.append(f"database.path: {db.path} is not an existing file")
        for spec in DATABASE_TOOLS:
            limit = start_to_close(spec)
            if spec.name in database_tools and limit is not None and db.timeout_seconds >= limit:
                problems.append(
                    f"database.timeout_seconds: {db.timeout_seconds:g} s does not end inside "
                    f"{spec.name}'s {limit:g} s start_to_close"
                )
    return problems


def _http_problems(config: Config, enabled: set[str]) -> list[str]:
    """[[http]]: each table declares one tool, enabled like any other by listing it in tools."""
    problems: list[str] = []
    builtin_names = {spec.name for spec in BUILTIN_TOOLS}
    declared: dict[str, int] = {}
    for index, table in enumerate(config.http):
        key = f"http.{index}.name"
        if table.name in builtin_names:
            problems.append(f"{key}: {table.name} is a builtin tool's name; choose another")
        elif table.name in declared:
            problems.append(f"{key}: {table.name} is also declared by http.{declared[table.name]}")
        else:
            declared[table.name] = index
        if table.name not in enabled:
            problems.append(f"{key}: {table.name} is declared but not enabled; add it to tools")
    if "http_request" in enabled and "http_request" not in declared:
        problems.append("tools: http_request needs an [[http]] table with its base_url")
    return problems


def advertised_specs(config: Config, specs: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """``specs`` as this deployment offers them: without ``git.allow_write``, ``git``'s
    operations are only status, diff, log and show (add and commit are absent from the schema).
    Each ``[[http]]`` table adds its own tool."""
    http = tuple(http_tool_spec(table) for table in config.http)
    if config.git.allow_write:
        return (*specs, *http)
    return (
        *(
            replace(spec, arguments=GitReadArgs, description=GIT_READ_ONLY_DESCRIPTION)
            if spec.arguments is GitArgs
            else spec
            for spec in specs
        ),
        *http,
    )


def build_catalog(
    config: Config, specs: Iterable[ToolSpec] = BUILTIN_TOOLS, source: str = "configuration"
) -> Catalog:
    """The deployment's catalog; a bad tool setting becomes a ``ConfigError`` naming its key."""
    specs = advertised_specs(config, specs)
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
    problems += config_problems(config)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))
    try:
        return Catalog(specs, config.catalog_settings())
    except CatalogError as exc:
        raise ConfigError(f"{source}: {exc}") from None


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
                message = "unknown key"
            problems.append(f"{key}: {message}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from None


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
