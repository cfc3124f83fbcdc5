"""The built-in tool families, in the order their tools are listed.

This is the one place that names them: the configuration model, the catalog, the worker and the
Temporal plugin loop over ``BUILTIN_FAMILIES``. Adding a family is a folder under ``activities/``
with its declaration (``toolcalls.activities.family.Family``) and one line here.
"""

from __future__ import annotations

from toolcalls.activities.calendar import CALENDAR
from toolcalls.activities.core import CORE
from toolcalls.activities.database import DATABASE
from toolcalls.activities.discovery import DISCOVERY
from toolcalls.activities.documents import DOCUMENTS
from toolcalls.activities.email import EMAIL
from toolcalls.activities.family import AnyFamily
from toolcalls.activities.files import FILES
from toolcalls.activities.network import NETWORK
from toolcalls.activities.processes import PROCESSES
from toolcalls.activities.processes.git import GIT
from toolcalls.activities.spec import ToolSpec
from toolcalls.activities.storage import STORAGE

BUILTIN_FAMILIES: tuple[AnyFamily, ...] = (
    CORE,
    PROCESSES,
    GIT,
    FILES,
    STORAGE,
    NETWORK,
    DOCUMENTS,
    DATABASE,
    CALENDAR,
    EMAIL,
    DISCOVERY,
)

BUILTIN_TOOLS: tuple[ToolSpec, ...] = tuple(
    spec for family in BUILTIN_FAMILIES for spec in family.tools
)
"""Every built-in tool as declared, before a configuration changes or adds any."""
