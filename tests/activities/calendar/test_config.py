"""The ``[calendar]`` table: what the enabled tools need, checked when the worker starts, and
the tools as each backend offers them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from toolcalls.activities.calendar import CALENDAR, CalendarTools
from toolcalls.activities.calendar.caldav import CalDAVCalendar
from toolcalls.activities.calendar.google import GoogleCalendar
from toolcalls.activities.calendar.outlook import OutlookCalendar
from toolcalls.activities.family import Extra
from toolcalls.worker.config import (
    ConfigError,
    build_catalog,
    config_problems,
    load_config,
    parse_config,
)
from toolcalls.worker.plugin import build_instances

TOOLS = ["list_calendar_events", "create_calendar_event"]
GOOGLE = {"backend": "google", "token_env": "GOOGLE_TOKEN"}
CALDAV = {
    "backend": "caldav",
    "url": "https://dav.example.com/calendars/alice/work/",
    "username": "alice",
    "password_env": "DAV_PASSWORD",
}


def problems(calendar: dict[str, Any], **data: Any) -> str:
    config = parse_config({"tools": TOOLS, "calendar": calendar, **data})
    with pytest.raises(ConfigError) as caught:
        build_catalog(config)
    return str(caught.value)


def catalog(calendar: dict[str, Any], **data: Any) -> Any:
    return build_catalog(parse_config({"tools": TOOLS, "calendar": calendar, **data}))


def test_a_backend_is_needed_once_a_tool_is_enabled() -> None:
    assert "calendar.backend: list_calendar_events, create_calendar_event need a backend" in (
        problems({})
    )
    assert build_catalog(parse_config({"calendar": {}})).names  # not enabled: nothing needed


@pytest.mark.parametrize("backend", ["exchange", "module", "a b:c", "pkg.mod:"])
def test_an_unknown_backend_names_the_choices(backend: str) -> None:
    with pytest.raises(ConfigError, match=r"calendar\.backend: .* is not a backend: use google"):
        parse_config({"calendar": {"backend": backend}})


@pytest.mark.parametrize("backend", ["google", "outlook"])
def test_oauth_backends_need_exactly_one_token_source(backend: str, tmp_path: Path) -> None:
    assert "calendar.token_env: list_calendar_events, create_calendar_event need an access " in (
        problems({"backend": backend})
    )
    both = problems({"backend": backend, "token_env": "T", "token_file": str(tmp_path / "t")})
    assert "calendar.token_file: set token_env or token_file, not both" in both
    assert catalog({"backend": backend, "token_file": str(tmp_path / "t")}).names == TOOLS


def test_caldav_needs_its_collection_user_and_password() -> None:
    message = problems({"backend": "caldav"})
    assert "calendar.url: list_calendar_events, create_calendar_event need the calendar" in message
    assert "calendar.username:" in message
    assert "calendar.password_env:" in message
    assert catalog(CALDAV).names == TOOLS


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://dav.example.com/cal/", "plain http is allowed only for a loopback address"),
        ("https://alice:pw@dav.example.com/cal/", "credentials do not belong in the url"),
        ("ftp://dav.example.com/cal/", "is not an http(s) url"),
        ("https://dav.example.com/cal/?x=1", "no query or fragment"),
    ],
)
def test_a_caldav_url_is_https_or_loopback_http(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=r"calendar\.url: .*" + re.escape(says)):
        parse_config({"calendar": {**CALDAV, "url": url}})


def test_loopback_http_is_accepted_and_a_collection_ends_in_a_slash() -> None:
    config = parse_config({"calendar": {**CALDAV, "url": "http://127.0.0.1:5232/alice/cal"}})
    assert CALENDAR.settings_from(config).calendar.url == "http://127.0.0.1:5232/alice/cal/"


def test_keys_of_another_backend_are_refused() -> None:
    message = problems({**GOOGLE, "url": "https://dav.example.com/x/", "user_id": "bob"})
    assert "calendar.url: the google backend does not use it" in message
    assert "calendar.user_id: the google backend does not use it" in message
    assert "calendar.token_env: the caldav backend does not use it" in problems(
        {**CALDAV, "token_env": "T"}
    )


def test_a_ca_file_must_exist_where_the_tools_run(tmp_path: Path) -> None:
    missing = tmp_path / "ca.pem"
    assert f"calendar.ca_file: {missing} is not an existing file" in problems(
        {**CALDAV, "ca_file": str(missing)}
    )
    elsewhere = {"worker": {"serve_tools": False}}
    assert catalog({**CALDAV, "ca_file": str(missing)}, **elsewhere).names == TOOLS


def test_the_timeout_must_end_inside_the_start_to_close() -> None:
    short = {
        "timeouts": {
            "create_calendar_event": {"start_to_close_seconds": 20, "heartbeat_seconds": 5}
        }
    }
    message = problems(GOOGLE, activities=short)
    assert "calendar.timeout_seconds: 30 s does not end inside create_calendar_event's 20 s" in (
        message
    )


def test_the_tools_time_out_after_the_configured_operation_bound() -> None:
    built = catalog({**GOOGLE, "timeout_seconds": 50})
    for name in TOOLS:
        options = built.options(name)
        assert options.start_to_close.total_seconds() == 60
        assert options.heartbeat is not None
        assert options.maximum_attempts == 1


@pytest.mark.parametrize(
    ("calendar", "says"),
    [
        (GOOGLE, "Google Calendar free-text search"),
        ({"backend": "outlook", "token_env": "T"}, "follow it"),
        (CALDAV, "case-insensitive substring of summary"),
        ({"backend": "tests.support.calendar_backend:MemoryCalendar"}, "Memory calendar"),
    ],
)
def test_the_listing_tells_the_model_the_backends_query_syntax(
    calendar: dict[str, Any], says: str
) -> None:
    [listing] = [spec for spec in catalog(calendar) if spec.name == "list_calendar_events"]
    assert says in listing.description


def test_a_custom_backend_that_does_not_import_is_refused_at_start() -> None:
    message = problems({"backend": "tests.support.no_such_module:Calendar"})
    assert "calendar.backend: cannot import tests.support.no_such_module" in message
    assert "calendar.options: the custom backend does not use it" not in message


def test_the_family_needs_the_integrations_extra() -> None:
    assert CALENDAR.extra is not None
    assert CALENDAR.extra.missing() == []
    missing = Extra("integrations", ("icalendar", "no_such_module_for_calendars"))
    config = parse_config({"tools": TOOLS, "calendar": GOOGLE})
    [problem] = config_problems(config, [dataclasses.replace(CALENDAR, extra=missing)])
    assert problem.startswith("calendar: list_calendar_events, create_calendar_event need the")
    assert "pip install 'toolcalls[integrations]'" in problem


@pytest.mark.parametrize(
    ("calendar", "kind"),
    [
        (GOOGLE, GoogleCalendar),
        ({"backend": "outlook", "token_env": "T", "user_id": "bob@example.com"}, OutlookCalendar),
        (CALDAV, CalDAVCalendar),
    ],
)
def test_the_worker_builds_the_configured_backend_connecting_to_nothing(
    calendar: dict[str, Any], kind: type
) -> None:
    config = parse_config({"tools": TOOLS, "calendar": calendar})
    built = build_instances(config, build_catalog(config), TOOLS, environ={})
    tools = built[CalendarTools]
    assert isinstance(tools, CalendarTools)
    assert isinstance(tools.backend, kind)


def test_a_configuration_file_can_be_scripted(tmp_path: Path) -> None:
    path = tmp_path / "toolcalls.toml"
    path.write_text(
        'tools = ["list_calendar_events", "create_calendar_event"]\n'
        "[calendar]\n"
        'backend = "outlook"\n'
        'user_id = "alice@example.com"\n'
        'calendar_id = "AAMkAD"\n'
        f'token_file = "{tmp_path / "token"}"\n'
        "timeout_seconds = 20\n"
    )
    config = load_config(path)
    settings = CALENDAR.settings_from(config).calendar
    assert (settings.backend, settings.user_id, settings.calendar_id) == (
        "outlook",
        "alice@example.com",
        "AAMkAD",
    )
