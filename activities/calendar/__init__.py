"""Calendar events: ``list_calendar_events`` and ``create_calendar_event`` on one calendar.

``family`` declares the tools; ``models`` their arguments and results, checked at plan;
``tools`` holds ``CalendarTools``; ``backend`` the ``CalendarBackend`` protocol a deployment
implements for another service and the contract every backend meets; ``google``, ``outlook``
and ``caldav`` the built-in backends (over ``toolcalls.activities.network.service``); ``custom`` the
adapter for a deployment's own; ``tokens`` the creation identity and the bound page tokens.
"""

from toolcalls.activities.calendar.backend import CalendarBackend
from toolcalls.activities.calendar.family import CALENDAR, CALENDAR_TOOLS
from toolcalls.activities.calendar.tokens import creation_id
from toolcalls.activities.calendar.tools import CalendarTools

__all__ = ["CALENDAR", "CALENDAR_TOOLS", "CalendarBackend", "CalendarTools", "creation_id"]
