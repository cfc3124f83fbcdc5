"""``current_datetime``: exact descriptions of fixed instants, zone names, and no local fallback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zoneinfo
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from toolcalls.activities.base import CallContext
from toolcalls.activities.core.clock import (
    MAX_TIMEZONE_CHARS,
    ClockTools,
    DateTimeArgs,
    DateTimeResult,
    describe,
    zone_for,
)

ROOT = Path(__file__).resolve().parents[3]
HOST_OFFSET = timedelta(hours=5, minutes=45)
UNKNOWN = "; use an IANA name like Europe/Zurich"


@pytest.fixture
def host_not_in_utc() -> Iterator[None]:
    """Put the worker's own local time at +05:45, so a fallback to it would show."""
    saved = os.environ.get("TZ")
    # A POSIX TZ string needs no timezone database on the host.
    os.environ["TZ"] = "<+0545>-05:45"
    time.tzset()
    try:
        assert datetime(2026, 7, 1, tzinfo=UTC).astimezone().utcoffset() == HOST_OFFSET
        yield
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


def at(text: str) -> datetime:
    """A UTC instant: ``at("2026-07-01T12:00")``."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def raises_exactly(message: str) -> AbstractContextManager[pytest.ExceptionInfo[ValueError]]:
    """``pytest.raises`` for a ``ValueError`` whose whole message is ``message``."""
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_limit_is_the_specs() -> None:
    assert MAX_TIMEZONE_CHARS == 100


def test_utc_needs_no_timezone_database() -> None:
    assert zone_for("UTC") is UTC


def test_utc_works_on_a_worker_without_any_timezone_database() -> None:
    # A separate interpreter with no system zone directories and the tzdata package unimportable.
    script = """
import sys
sys.modules["tzdata"] = None
from datetime import UTC, datetime
from toolcalls.activities.core.clock import describe, zone_for
print(describe(datetime(2026, 7, 1, 12, tzinfo=UTC), "UTC").model_dump_json())
for name in ("Europe/Zurich", "Mars/Base"):
    try:
        zone_for(name)
    except ValueError as error:
        print(error)
"""
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONTZPATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    described, zurich, mars = completed.stdout.splitlines()
    assert json.loads(described) == {
        "timezone": "UTC",
        "timestamp": "2026-07-01T12:00:00+00:00",
        "date": "2026-07-01",
        "time": "12:00:00",
        "weekday": "Wednesday",
        "utc_offset": "+00:00",
        "unix_timestamp": 1782907200.0,
    }
    assert zurich == (
        "timezone 'Europe/Zurich' is unavailable: no timezone database on this worker "
        "(install the tzdata package)"
    )
    assert mars.startswith("timezone 'Mars/Base' is unavailable")


def test_real_zones_load_from_the_database() -> None:
    zurich = zone_for("Europe/Zurich")
    assert isinstance(zurich, zoneinfo.ZoneInfo)
    assert zurich.key == "Europe/Zurich"
    assert zone_for("America/New_York") is zoneinfo.ZoneInfo("America/New_York")


@pytest.mark.parametrize(
    ("instant", "name", "timestamp", "weekday"),
    [
        (at("2026-07-01T12:00"), "UTC", "2026-07-01T12:00:00+00:00", "Wednesday"),
        (at("2026-07-01T12:00"), "Etc/UTC", "2026-07-01T12:00:00+00:00", "Wednesday"),
        (at("2026-07-01T12:00"), "Europe/Zurich", "2026-07-01T14:00:00+02:00", "Wednesday"),
        (at("2026-01-01T12:00"), "Europe/Zurich", "2026-01-01T13:00:00+01:00", "Thursday"),
        (at("2026-07-01T12:00"), "America/New_York", "2026-07-01T08:00:00-04:00", "Wednesday"),
        (at("2026-01-01T12:00"), "America/New_York", "2026-01-01T07:00:00-05:00", "Thursday"),
        (at("2026-01-01T02:00"), "America/New_York", "2025-12-31T21:00:00-05:00", "Wednesday"),
        (at("2026-07-01T12:00"), "Asia/Kolkata", "2026-07-01T17:30:00+05:30", "Wednesday"),
        (at("2026-07-01T12:00"), "Asia/Kathmandu", "2026-07-01T17:45:00+05:45", "Wednesday"),
        (at("2026-01-01T12:00"), "America/St_Johns", "2026-01-01T08:30:00-03:30", "Thursday"),
        (at("2026-07-01T12:00"), "Australia/Sydney", "2026-07-01T22:00:00+10:00", "Wednesday"),
        (at("2026-01-01T12:00"), "Australia/Sydney", "2026-01-01T23:00:00+11:00", "Thursday"),
        (at("2026-07-01T12:00"), "Pacific/Kiritimati", "2026-07-02T02:00:00+14:00", "Thursday"),
        (at("2026-07-01T12:00"), "Etc/GMT+5", "2026-07-01T07:00:00-05:00", "Wednesday"),
        (at("1850-01-01T00:00"), "Europe/Zurich", "1850-01-01T00:34:08+00:34:08", "Tuesday"),
        (at("1850-01-01T00:00"), "America/New_York", "1849-12-31T19:03:58-04:56:02", "Monday"),
    ],
)
def test_describe_fixed_instants_exactly(
    instant: datetime, name: str, timestamp: str, weekday: str
) -> None:
    result = describe(instant, name)
    assert result == DateTimeResult(
        timezone=name,
        timestamp=timestamp,
        date=timestamp[:10],
        time=timestamp[11:19],
        weekday=weekday,
        utc_offset=timestamp[19:],
        unix_timestamp=instant.timestamp(),
    )
    assert datetime.fromisoformat(result.timestamp) == instant


def test_describe_fractional_seconds_and_unix_timestamp() -> None:
    instant = datetime(2026, 11, 29, 19, 15, 0, 123456, tzinfo=UTC)
    result = describe(instant, "Europe/Zurich")
    assert result.timestamp == "2026-11-29T20:15:00.123456+01:00"
    assert result.date == "2026-11-29"
    assert result.time == "20:15:00.123456"
    assert result.weekday == "Sunday"
    assert result.unix_timestamp == 1795979700.123456
    assert describe(at("2026-07-01T12:00"), "Europe/Zurich").unix_timestamp == 1782907200.0
    assert describe(at("2026-01-01T12:00"), "America/New_York").unix_timestamp == 1767268800.0
    assert describe(at("1970-01-01T00:00"), "Asia/Tokyo").unix_timestamp == 0.0


@pytest.mark.parametrize(
    ("instant", "name", "timestamp"),
    [
        (at("2026-03-08T06:59:59"), "America/New_York", "2026-03-08T01:59:59-05:00"),
        (at("2026-03-08T07:00"), "America/New_York", "2026-03-08T03:00:00-04:00"),
        (at("2026-11-01T05:30"), "America/New_York", "2026-11-01T01:30:00-04:00"),
        (at("2026-11-01T06:30"), "America/New_York", "2026-11-01T01:30:00-05:00"),
        (at("2026-03-29T00:59:59"), "Europe/Zurich", "2026-03-29T01:59:59+01:00"),
        (at("2026-03-29T01:00"), "Europe/Zurich", "2026-03-29T03:00:00+02:00"),
        (at("2026-10-25T00:30"), "Europe/Zurich", "2026-10-25T02:30:00+02:00"),
        (at("2026-10-25T01:30"), "Europe/Zurich", "2026-10-25T02:30:00+01:00"),
    ],
)
def test_daylight_saving_transitions(instant: datetime, name: str, timestamp: str) -> None:
    result = describe(instant, name)
    assert result.timestamp == timestamp
    assert result.utc_offset == timestamp[-6:]
    assert result.weekday == "Sunday"
    assert result.unix_timestamp == instant.timestamp()


def test_repeated_wall_time_keeps_distinct_instants() -> None:
    first = describe(at("2026-11-01T05:30"), "America/New_York")
    second = describe(at("2026-11-01T06:30"), "America/New_York")
    assert first.time == second.time == "01:30:00"
    assert second.unix_timestamp - first.unix_timestamp == 3600.0


def test_describe_converts_aware_datetimes_from_any_zone() -> None:
    zurich_noon = datetime(2026, 7, 1, 14, tzinfo=zoneinfo.ZoneInfo("Europe/Zurich"))
    assert describe(zurich_noon, "UTC").timestamp == "2026-07-01T12:00:00+00:00"
    fixed = datetime(2026, 7, 1, 9, tzinfo=timezone(timedelta(hours=-3)))
    assert describe(fixed, "Asia/Tokyo").timestamp == "2026-07-01T21:00:00+09:00"


def test_describe_refuses_a_naive_datetime(host_not_in_utc: None) -> None:
    # astimezone() would have read it as the worker's +05:45 local time.
    with raises_exactly("now must be timezone-aware"):
        describe(datetime(2026, 7, 1, 12), "UTC")


@pytest.mark.parametrize("name", ["", " ", "\t\n", " " * 150])
def test_empty_timezone(name: str) -> None:
    with raises_exactly("timezone is empty"):
        zone_for(name)


def test_length_limit_is_100_characters() -> None:
    with raises_exactly("timezone has 101 characters; the limit is 100"):
        zone_for("A" * 101)
    with raises_exactly("timezone has 5000 characters; the limit is 100"):
        zone_for("Europe/" * 714 + "Zu")
    with raises_exactly(f"unknown timezone '{'A' * 100}'{UNKNOWN}"):
        zone_for("A" * 100)


@pytest.mark.parametrize(
    "name",
    [
        "Mars/Olympus_Mons",
        "Europe/Atlantis",
        "utc",
        "Europe/zurich",
        "CEST",
        "Europe/Zürich",
        " UTC",
        "UTC ",
        "Europe/Zurich\n",
        "UTC\x00",
    ],
)
def test_unknown_zone(name: str) -> None:
    with raises_exactly(f"unknown timezone {name!r}{UNKNOWN}"):
        zone_for(name)


@pytest.mark.parametrize(
    "name",
    [
        "../../etc/passwd",
        "/etc/localtime",
        "/usr/share/zoneinfo/Europe/Zurich",
        "Europe/../UTC",
        "Europe/../../../../etc/passwd",
        "./UTC",
        "Europe//Zurich",
        "Europe/Zurich/",
        "Europe\\Zurich",
        "C:\\Windows\\win.ini",
        "~/tz",
        "%2e%2e/etc/passwd",
        "file:///etc/localtime",
    ],
)
def test_path_like_names_are_refused(name: str) -> None:
    with raises_exactly(f"unknown timezone {name!r}{UNKNOWN}"):
        zone_for(name)


@pytest.mark.parametrize(
    "name",
    [
        "America",
        "Europe",
        "Etc",
        "America/Argentina",
        "posix",
        "right",
        "leapseconds",
        "iso3166.tab",
        "tzdata.zi",
        "__init__",
        "__pycache__",
        "Europe/__init__",
    ],
)
def test_directories_and_data_files_are_not_zones(name: str) -> None:
    with raises_exactly(f"unknown timezone {name!r}{UNKNOWN}"):
        zone_for(name)


@pytest.mark.parametrize("name", ["localtime", "LocalTime", "posixrules"])
def test_host_aliases_are_refused(name: str, host_not_in_utc: None) -> None:
    with raises_exactly(f"timezone {name!r} is the host's own setting{UNKNOWN}"):
        zone_for(name)


def test_args_default_to_utc() -> None:
    assert DateTimeArgs().timezone == "UTC"
    assert DateTimeArgs.model_validate({}).timezone == "UTC"
    assert DateTimeArgs.model_validate({"timezone": None}).timezone == "UTC"
    assert DateTimeArgs(timezone="America/New_York").timezone == "America/New_York"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Mars/Olympus_Mons", f"unknown timezone 'Mars/Olympus_Mons'{UNKNOWN}"),
        ("../../etc/passwd", f"unknown timezone '../../etc/passwd'{UNKNOWN}"),
        ("/etc/localtime", f"unknown timezone '/etc/localtime'{UNKNOWN}"),
        ("America", f"unknown timezone 'America'{UNKNOWN}"),
        ("localtime", "timezone 'localtime' is the host's own setting"),
        ("", "timezone is empty"),
        ("   ", "timezone is empty"),
        ("x" * 101, "timezone has 101 characters; the limit is 100"),
    ],
)
def test_args_reject_bad_zones_with_a_named_problem(name: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        DateTimeArgs(timezone=name)
    (error,) = caught.value.errors()
    assert error["loc"] == ("timezone",)
    assert error["type"] == "value_error"
    assert message in error["msg"]


def test_args_model_is_closed() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        DateTimeArgs.model_validate({"timezone": "UTC", "fallback": "local"})
    with pytest.raises(ValidationError, match="valid string"):
        DateTimeArgs.model_validate({"timezone": 1})


def _check_now(result: DateTimeResult, before: datetime, after: datetime) -> datetime:
    """The instant ``result`` describes, after checking its fields agree with each other."""
    moment = datetime.fromisoformat(result.timestamp)
    assert before <= moment <= after
    assert result.unix_timestamp == moment.timestamp()
    assert result.date == moment.date().isoformat()
    assert result.time == moment.time().isoformat()
    assert result.weekday == moment.strftime("%A")
    return moment


async def test_current_datetime_defaults_to_utc(host_not_in_utc: None, call: CallContext) -> None:
    before = datetime.now(UTC)
    result = await ClockTools().current_datetime(DateTimeArgs(), call)
    after = datetime.now(UTC)
    moment = _check_now(result, before, after)
    assert result.timezone == "UTC"
    assert result.utc_offset == "+00:00"
    assert moment.utcoffset() == timedelta(0)
    assert result.timestamp.endswith("+00:00")


async def test_current_datetime_in_a_real_zone(host_not_in_utc: None, call: CallContext) -> None:
    zone = zoneinfo.ZoneInfo("America/New_York")
    before = datetime.now(UTC)
    result = await ClockTools().current_datetime(DateTimeArgs(timezone=zone.key), call)
    after = datetime.now(UTC)
    moment = _check_now(result, before, after)
    expected = zone.utcoffset(moment.replace(tzinfo=None))
    assert expected in (timedelta(hours=-5), timedelta(hours=-4))
    assert moment.utcoffset() == expected
    assert result.utc_offset == ("-05:00" if expected == timedelta(hours=-5) else "-04:00")
    assert result.timezone == "America/New_York"


async def test_current_datetime_never_reports_host_time(
    host_not_in_utc: None, call: CallContext
) -> None:
    for name in ("UTC", "Europe/Zurich", "Asia/Tokyo"):
        result = await ClockTools().current_datetime(DateTimeArgs(timezone=name), call)
        assert datetime.fromisoformat(result.timestamp).utcoffset() != HOST_OFFSET
        assert result.utc_offset != "+05:45"
    with pytest.raises(ValidationError, match="host's own setting"):
        DateTimeArgs(timezone="localtime")
