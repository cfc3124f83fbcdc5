"""The tools: one folder per tool family, the catalog that assembles them, and their runtime.

``toolcalls.activities.families`` lists the built-in families; ``toolcalls.activities.family`` says
what each declares.
"""

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
