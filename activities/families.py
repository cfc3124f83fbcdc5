"""The built-in tool families, in the order their tools are listed.

This is the one place that names them: the configuration model, the catalog, the worker and the
Temporal plugin loop over ``BUILTIN_FAMILIES``. Adding a family is a folder under ``activities/``
with its declaration (``activities.family.Family``) and one line here.
"""

from __future__ import annotations

from activities.calendar import CALENDAR
from activities.catalog import ToolSpec
from activities.core import CORE
from activities.database import DATABASE
from activities.discovery import DISCOVERY
from activities.documents import DOCUMENTS
from activities.email import EMAIL
from activities.family import AnyFamily
from activities.files import FILES
from activities.network import NETWORK
from activities.processes import PROCESSES
from activities.processes.git import GIT
from activities.storage import STORAGE

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
