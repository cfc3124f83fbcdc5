"""The tools: one module per tool family, the catalog that declares them, and their runtime."""

from activities.base import CallContext, ToolArgs, ToolResult
from activities.catalog import (
    BUILTIN_TOOLS,
    CAPABILITIES,
    Catalog,
    CatalogError,
    CatalogSettings,
    Timeouts,
    ToolSpec,
    call_digest,
    default_ceiling,
)
from activities.errors import tool_error
from activities.heartbeat import Heartbeat
from activities.runtime import ToolRuntime

__all__ = [
    "BUILTIN_TOOLS",
    "CAPABILITIES",
    "CallContext",
    "Catalog",
    "CatalogError",
    "CatalogSettings",
    "Heartbeat",
    "Timeouts",
    "ToolArgs",
    "ToolResult",
    "ToolRuntime",
    "ToolSpec",
    "call_digest",
    "default_ceiling",
    "tool_error",
]
