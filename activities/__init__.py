"""The tools: one folder per tool family, the catalog that assembles them, and their runtime.

``toolcalls.activities.families`` lists the built-in families; ``toolcalls.activities.family`` says
what each declares.

Each name below is imported on first use: a command that reads one family's settings or the
capabilities should not load the worker's runtime (its OAuth client, Cedar, HTTP stack).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcalls._lazy import lazy_names

if TYPE_CHECKING:
    from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
    from toolcalls.activities.capabilities import CAPABILITIES, default_ceiling
    from toolcalls.activities.catalog import Catalog, CatalogError, CatalogSettings, call_digest
    from toolcalls.activities.definitions import DEFINITION_FORMATS, DefinitionFormat
    from toolcalls.activities.errors import tool_error
    from toolcalls.activities.family import (
        Deployment,
        Extra,
        Family,
        FamilySettings,
        NoSettings,
        Resources,
    )
    from toolcalls.activities.heartbeat import Heartbeat
    from toolcalls.activities.runtime import ToolRuntime
    from toolcalls.activities.spec import Timeouts, ToolSpec

__all__ = [
    "CAPABILITIES",
    "DEFINITION_FORMATS",
    "CallContext",
    "Catalog",
    "CatalogError",
    "CatalogSettings",
    "DefinitionFormat",
    "Deployment",
    "Extra",
    "Family",
    "FamilySettings",
    "Heartbeat",
    "NoSettings",
    "Resources",
    "Timeouts",
    "ToolArgs",
    "ToolResult",
    "ToolRuntime",
    "ToolSpec",
    "call_digest",
    "default_ceiling",
    "tool_error",
]

_WHERE = {
    "CAPABILITIES": "toolcalls.activities.capabilities",
    "DEFINITION_FORMATS": "toolcalls.activities.definitions",
    "CallContext": "toolcalls.activities.base",
    "Catalog": "toolcalls.activities.catalog",
    "CatalogError": "toolcalls.activities.catalog",
    "CatalogSettings": "toolcalls.activities.catalog",
    "DefinitionFormat": "toolcalls.activities.definitions",
    "Deployment": "toolcalls.activities.family",
    "Extra": "toolcalls.activities.family",
    "Family": "toolcalls.activities.family",
    "FamilySettings": "toolcalls.activities.family",
    "Heartbeat": "toolcalls.activities.heartbeat",
    "NoSettings": "toolcalls.activities.family",
    "Resources": "toolcalls.activities.family",
    "Timeouts": "toolcalls.activities.spec",
    "ToolArgs": "toolcalls.activities.base",
    "ToolResult": "toolcalls.activities.base",
    "ToolRuntime": "toolcalls.activities.runtime",
    "ToolSpec": "toolcalls.activities.spec",
    "call_digest": "toolcalls.activities.catalog",
    "default_ceiling": "toolcalls.activities.capabilities",
    "tool_error": "toolcalls.activities.errors",
}
"""The module each public name lives in."""


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
