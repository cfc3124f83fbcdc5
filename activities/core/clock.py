"""``current_datetime``: the current time in an IANA timezone.

Reads the worker's clock and timezone database; touches nothing else. ``UTC`` needs no database;
other zones come from the system database or the ``tzdata`` package. An unknown or unavailable
zone is an error, never a silent fallback to the host's local time.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache

from pydantic import Field, field_validator

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult

MAX_TIMEZONE_CHARS = 100
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*")
_HOST_ALIASES = frozenset({"localtime", "posixrules"})
"""Files some hosts keep in the zone directory that stand for the host's own setting, not a zone."""
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


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
        raise ValueError(_unknown(name))
    if name.lower() in _HOST_ALIASES:
        # Debian ships zoneinfo/localtime -> /etc/localtime: loading it would be the silent
        # fallback to the worker's local time that the tool promises never to make.
        raise ValueError(
            f"timezone {name!r} is the host's own setting; use an IANA name like Europe/Zurich"
        )
    return _load_zone(name)


@lru_cache(maxsize=256)
def _load_zone(name: str) -> tzinfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        if not _have_database():
            raise ValueError(
                f"timezone {name!r} is unavailable: no timezone database on this worker "
                "(install the tzdata package)"
            ) from None
        raise ValueError(_unknown(name)) from None


def _unknown(name: str) -> str:
    return f"unknown timezone {name!r}; use an IANA name like Europe/Zurich"


@lru_cache(maxsize=1)
def _have_database() -> bool:
    # Listing the zones walks the database directories; do it once, not on every unknown name.
    return bool(zoneinfo.available_timezones())


def describe(now: datetime, name: str) -> DateTimeResult:
    """Describe the aware datetime ``now`` in the zone called ``name``."""
    if now.utcoffset() is None:
        # astimezone() would read a naive datetime as the worker's local time.
        raise ValueError("now must be timezone-aware")
    local = now.astimezone(zone_for(name))
    return DateTimeResult(
        timezone=name,
        timestamp=local.isoformat(),
        date=local.date().isoformat(),
        time=local.time().isoformat(),
        # Not strftime("%A"): that follows the process locale.
        weekday=_WEEKDAYS[local.weekday()],
        utc_offset=_format_offset(local.utcoffset() or timedelta(0)),
        unix_timestamp=local.timestamp(),
    )


def _format_offset(offset: timedelta) -> str:
    """``+01:00``; ``+00:34:08`` for the local mean time offsets of old dates."""
    sign = "-" if offset < timedelta(0) else "+"
    seconds = int(abs(offset).total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}"
    return f"{text}:{seconds:02d}" if seconds else text


class ClockTools:
    """The worker's clock."""

    async def current_datetime(self, args: DateTimeArgs, call: CallContext) -> DateTimeResult:
        """The current time in ``args.timezone``."""
        return describe(datetime.now(UTC), args.timezone)
