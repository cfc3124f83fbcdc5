"""``current_datetime``: the current time in an IANA timezone.

Reads the worker's clock and timezone database; touches nothing else. ``UTC`` needs no database;
other zones come from the system database or the ``tzdata`` package. An unknown or unavailable
zone is an error, never a silent fallback to the host's local time.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime, tzinfo
from functools import lru_cache

from pydantic import Field, field_validator

from activities.base import CallContext, ToolArgs, ToolResult

MAX_TIMEZONE_CHARS = 100
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*")


class DateTimeArgs(ToolArgs):
    timezone: str = Field(
        default="UTC",
        description="IANA timezone name such as Europe/Zurich, at most 100 characters.",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        zone_for(value)
        return value


class DateTimeResult(ToolResult):
    timezone: str
    timestamp: str
    """ISO 8601 with the UTC offset, e.g. ``2026-11-29T20:15:00.123456+01:00``."""
    date: str
    time: str
    weekday: str
    utc_offset: str
    unix_timestamp: float


def zone_for(name: str) -> tzinfo:
    """The ``tzinfo`` for an IANA name, or ``ValueError`` naming why there is none."""
    if not name.strip():
        raise ValueError("timezone is empty")
    if len(name) > MAX_TIMEZONE_CHARS:
        raise ValueError(f"timezone has {len(name)} characters; the limit is {MAX_TIMEZONE_CHARS}")
    if name == "UTC":
        return UTC
    if _ZONE_NAME.fullmatch(name) is None:
        raise ValueError(f"unknown timezone {name!r}")
    return _load_zone(name)


@lru_cache(maxsize=256)
def _load_zone(name: str) -> tzinfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        if not zoneinfo.available_timezones():
            raise ValueError(
                f"timezone {name!r} is unavailable: no timezone database on this worker "
                "(install the tzdata package)"
            ) from None
        raise ValueError(
            f"unknown timezone {name!r}; use an IANA name like Europe/Zurich"
        ) from None


def describe(now: datetime, name: str) -> DateTimeResult:
    """Describe the aware datetime ``now`` in the zone called ``name``."""
    local = now.astimezone(zone_for(name))
    offset = local.strftime("%z")
    return DateTimeResult(
        timezone=name,
        timestamp=local.isoformat(),
        date=local.date().isoformat(),
        time=local.time().isoformat(),
        weekday=local.strftime("%A"),
        utc_offset=f"{offset[:3]}:{offset[3:]}",
        unix_timestamp=local.timestamp(),
    )


class ClockTools:
    """The worker's clock."""

    async def current_datetime(self, args: DateTimeArgs, call: CallContext) -> DateTimeResult:
        """The current time in ``args.timezone``."""
        return describe(datetime.now(UTC), args.timezone)
