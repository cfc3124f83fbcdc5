"""The checks a tool's declaration must pass before a catalog holds it
(``toolcalls.activities.catalog``).

Bad declarations fail at worker start, not inside a running workflow where Temporal would retry
the failing task forever.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, get_args

from pydantic import BaseModel

from toolcalls.activities.base import ToolArgs
from toolcalls.activities.capabilities import CAPABILITIES
from toolcalls.activities.schema import strict_schema
from toolcalls.activities.spec import Timeouts, ToolSpec

HEARTBEAT_REQUIRED_AFTER = timedelta(seconds=10)
"""A tool allowed to run longer than this must heartbeat, or cancellation never reaches it."""
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class CatalogError(ValueError):
    """The catalog or its settings are invalid; the message names the tool and the option."""


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


def check_spec(spec: ToolSpec) -> None:
    """Refuse a spec the catalog cannot run: its name, description, capabilities, method,
    timeouts and strict schema."""
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
        check_timeouts(spec.name, spec.timeouts)
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


def check_timeouts(name: str, timeouts: Timeouts) -> None:
    """Refuse timeouts Temporal would take but that cannot work: a heartbeat is needed beyond
    a few seconds, or cancellation never reaches the tool."""
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
