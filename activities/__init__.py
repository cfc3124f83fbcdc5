"""The tools: one folder per tool family, the catalog that assembles them, and their runtime.

``activities.families`` lists the built-in families; ``activities.family`` says what each declares.
"""

from activities.base import CallContext, ToolArgs, ToolResult
from activities.capabilities import CAPABILITIES, default_ceiling
from activities.catalog import (
    Catalog,
    CatalogError,
    CatalogSettings,
    Timeouts,
    ToolSpec,
    call_digest,
)
from activities.definitions import DEFINITION_FORMATS, DefinitionFormat
from activities.errors import tool_error
from activities.family import Deployment, Extra, Family, FamilySettings, NoSettings, Resources
from activities.heartbeat import Heartbeat
from activities.runtime import ToolRuntime

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
