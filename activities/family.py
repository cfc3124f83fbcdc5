"""What a tool family declares about itself, and what the worker hands it.

A family is one folder of ``activities/`` and one immutable ``Family`` value in it: the sections of
the configuration file it owns (its settings model), its tool specs, how it builds the objects
whose methods are its tools, what it checks in the configuration, the extra it needs and how its
tools look under a given configuration. ``toolcalls.activities.families`` lists the built-in
families; the configuration model, the catalog, the worker and the Temporal plugin are loops over
that list, so nothing outside a family's folder names it.
"""

from __future__ import annotations

import importlib.util
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeAlias, TypeVar, cast

from pydantic import BaseModel, ConfigDict

from toolcalls.activities.catalog import Catalog
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES
from toolcalls.activities.spec import ToolSpec

S = TypeVar("S", bound="FamilySettings")
T = TypeVar("T")


class FamilySettings(BaseModel):
    """A family's part of the configuration file: each field is one top-level table (or array
    of tables), named as the file names it (``[process]``, ``[[http]]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoSettings(FamilySettings):
    """The settings of a family the deployment configures nothing about."""


class FamilyError(RuntimeError):
    """A tool family's resource could not be opened; the message names the setting."""


@dataclass(frozen=True)
class Extra:
    """An optional dependency set a family needs (``pip install 'toolcalls[NAME]'``)."""

    name: str
    modules: tuple[str, ...]
    """Modules the extra installs; one the worker cannot import means the extra is missing."""

    @property
    def hint(self) -> str:
        return f"pip install 'toolcalls[{self.name}]'"

    def missing(self) -> list[str]:
        """The extra's modules this interpreter cannot import."""
        missing = []
        for module in self.modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(module)
        return missing


@dataclass(frozen=True)
class Deployment:
    """What a family's configuration checks may ask about the deployment beyond its settings."""

    enabled: frozenset[str]
    """Every enabled tool."""
    declared: frozenset[str]
    """Every tool name a family declares (before configuration adds any)."""
    runs_here: Callable[[Iterable[str]], bool]
    """Whether this process runs any of the named tools: paths (roots, executables, files) must
    exist only on the hosts that run the tools using them."""
    start_to_close: Callable[[str], float | None]
    """A tool's start-to-close in seconds, the deployment's override included."""
    result_bytes: int = MAX_PAYLOAD_BYTES
    """What a tool's result may reach: 1 MiB, or more with a payload store (``[payloads]``)."""
    providers: frozenset[str] = frozenset()
    """The ``[[connections.providers]]`` configured (``google``, ``microsoft``)."""

    def enabled_of(self, specs: Iterable[ToolSpec]) -> list[str]:
        """The names of ``specs`` that are enabled, in declaration order."""
        return [spec.name for spec in specs if spec.name in self.enabled]


class Resources:
    """What the worker hands the families it builds: the tools it serves, its state directory,
    its environment, and resources several families share, each built once on first use (one
    process ledger for processes and git, say)."""

    def __init__(
        self,
        served: Mapping[str, type],
        state_dir: Path,
        environ: Mapping[str, str],
        result_bytes: int = MAX_PAYLOAD_BYTES,
        catalog: Catalog | None = None,
        connections: Any = None,
    ) -> None:
        """``served``: each tool this worker serves, and the class whose method runs it;
        ``result_bytes``: what a tool's result may reach (``Deployment.result_bytes``);
        ``catalog``: the deployment's enabled tools, for a family that describes them."""
        self._served = dict(served)
        self.catalog = catalog
        self.state_dir = state_dir
        self.environ = environ
        self.result_bytes = result_bytes
        self.connections = connections
        """The deployment's ``Connections`` (``[connections]``), if it has any."""
        self._shared: dict[str, Any] = {}

    def serves(self, implementation: type) -> bool:
        """Whether this worker serves any tool ``implementation`` runs."""
        return implementation in self._served.values()

    def implementations(self, base: type) -> dict[str, type]:
        """Served tools whose classes derive from ``base`` (one class per configured tool)."""
        return {name: cls for name, cls in self._served.items() if issubclass(cls, base)}

    def shared(self, setting: str, build: Callable[[], T]) -> T:
        """The resource named by ``setting``, built by the first family that asks for it."""
        if setting not in self._shared:
            self._shared[setting] = self.open(setting, build)
        value: T = self._shared[setting]
        return value

    @staticmethod
    def open(setting: str, build: Callable[[], T], errors: tuple[type[Exception], ...] = ()) -> T:
        """``build()``, with a failure to open a resource (an ``OSError``, ``ValueError``,
        ``sqlite3.Error`` or one of ``errors``) reported against ``setting``."""
        caught: tuple[type[Exception], ...] = (OSError, ValueError, sqlite3.Error, *errors)
        try:
            return build()
        except caught as exc:
            raise FamilyError(f"{setting}: {exc}") from exc


def needs(tools: Sequence[str]) -> str:
    """``"read_file needs"`` or ``"read_file, list_files need"``: the start of a problem."""
    return f"{', '.join(tools)} {'needs' if len(tools) == 1 else 'need'}"


def _no_problems(settings: Any, deployment: Deployment) -> list[str]:
    return []


@dataclass(frozen=True)
class Family(Generic[S]):
    """One tool family, declared once.

    ``build`` returns the objects whose methods are the tools this worker serves (ask
    ``resources.serves``); one with an ``aclose`` coroutine method is closed once the worker has
    stopped (``ToolCallsPlugin.run_worker``); ``problems`` lists what the enabled tools need and
    the settings lack, each naming its key; ``advertise`` gives the tools as this configuration
    offers them (fewer operations, tools the configuration declares), default ``tools``
    unchanged.
    """

    name: str
    settings: type[S]
    tools: tuple[ToolSpec, ...]
    build: Callable[[S, Resources], Iterable[object]]
    problems: Callable[[S, Deployment], list[str]] = _no_problems
    advertise: Callable[[S, tuple[ToolSpec, ...]], tuple[ToolSpec, ...]] | None = None
    extra: Extra | None = None
    sections: tuple[str, ...] = field(init=False)
    """The configuration keys ``settings`` owns."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sections", tuple(self.settings.model_fields))

    def offered(self, settings: S) -> tuple[ToolSpec, ...]:
        """The tools as a deployment with ``settings`` offers them."""
        return self.advertise(settings, self.tools) if self.advertise else self.tools

    def settings_from(self, config: BaseModel) -> S:
        """This family's settings out of a validated configuration holding its sections."""
        values = {section: getattr(config, section) for section in self.sections}
        return cast(S, self.settings.model_construct(**values))


AnyFamily: TypeAlias = Family[Any]
"""A family of any settings, as the lists of families hold them."""
