"""The calendar tools' arguments end at plan when they are wrong: before any approval is asked
or a backend is called (``Catalog.plan``, the ``plan`` activity's code)."""

from __future__ import annotations

from typing import Any

import pytest

from toolcalls.activities.calendar import CALENDAR_TOOLS
from toolcalls.activities.calendar.models import parse_timestamp
from toolcalls.activities.calendar.tokens import PageToken, creation_id, scope_digest, window_digest
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.workflows.models.call import CallPlan, ErrorCode, PlanInput, ToolError

CATALOG = Catalog(
    CALENDAR_TOOLS,
    CatalogSettings(enabled=("list_calendar_events", "create_calendar_event")),
)
WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
LUNCH = {"title": "Lunch", "start": "2026-01-07T12:00:00+01:00", "end": "2026-01-07T13:00Z"}


def plan(tool: str, arguments: dict[str, Any]) -> CallPlan | ToolError:
    outcome = CATALOG.plan(
        PlanInput(tool=tool, arguments=arguments), default_ceiling(), frozenset()
    )
    if outcome.plan is not None:
        return outcome.plan
    assert outcome.error is not None
    return outcome.error


def refused(tool: str, arguments: dict[str, Any]) -> ToolError:
    error = plan(tool, arguments)
    assert isinstance(error, ToolError), error
    assert error.code is ErrorCode.INVALID_ARGUMENTS
    return error


def test_good_calls_plan_with_their_capabilities() -> None:
    listing = plan("list_calendar_events", WEEK)
    creation = plan("create_calendar_event", LUNCH)
    assert isinstance(listing, CallPlan)
    assert isinstance(creation, CallPlan)
    assert (listing.capabilities, listing.side_effect.value) == (["calendar.read"], "read")
    assert (creation.capabilities, creation.side_effect.value) == (["calendar.write"], "write")
    assert creation.prepare  # the approval shows the exact event
    assert listing.arguments == {**WEEK, "query": "", "max_results": 20, "page_token": None}


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"start": "2026-01-05T00:00:00"}, "start", "has no offset"),
        ({"end": "2026-01-12"}, "end", "has no offset"),
        ({"start": "next monday"}, "start", "not an ISO 8601 timestamp"),
        ({"start": "1700000000"}, "start", "not an ISO 8601 timestamp"),
        ({"end": "2026-01-05T00:00:00+01:00"}, "end", "is not after start"),
        ({"end": "2026-01-04T22:59:59Z"}, "end", "is not after start"),
        ({"start": "0001-01-01T00:00:00+00:00"}, "start", "outside the years"),
        ({"max_results": 0}, "max_results", "greater than or equal to 1"),
        ({"max_results": 101}, "max_results", "less than or equal to 100"),
        ({"query": "a\r\nb"}, "query", "control character"),
        ({"query": "x" * 501}, "query", "at most 500"),
        ({"page_token": "whatever"}, "page_token", "not a next_page_token"),
    ],
)
def test_bad_listing_arguments(changes: dict[str, Any], field: str, says: str) -> None:
    error = refused("list_calendar_events", {**WEEK, **changes})
    assert error.fixable_args == [field]
    assert says in error.message


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"title": "Hi\r\nBcc: x@example.com"}, "title", "control character (U+000D)"),
        ({"title": "Hi\nDTSTART:19700101T000000Z"}, "title", "control character (U+000A)"),
        ({"title": "tab\there"}, "title", "control character"),
        ({"title": "   "}, "title", "is blank"),
        ({"title": "invoice\u202etxt.exe"}, "title", "bidirectional control"),
        ({"description": "line one\u2028line two"}, "description", "line separator"),
        ({"location": "Room\x1b[31m 4"}, "location", "control character"),
        ({"location": "x\x85y"}, "location", "control character"),
        ({"start": "2026-01-07T12:00:00"}, "start", "has no offset"),
        ({"end": "2026-01-07T11:00:00Z"}, "end", "is not after start"),
        ({"title": "x" * 1001}, "title", "at most 1000"),
    ],
)
def test_bad_creation_arguments(changes: dict[str, Any], field: str, says: str) -> None:
    error = refused("create_calendar_event", {**LUNCH, **changes})
    assert error.fixable_args == [field]
    assert says in error.message


def test_text_beyond_ascii_is_welcome() -> None:
    family = "Family dinner \U0001f468\u200d\U0001f469\u200d\U0001f467 at Café Zürich"
    assert isinstance(plan("create_calendar_event", {**LUNCH, "title": family}), CallPlan)


def token_for(**window: Any) -> str:
    start = parse_timestamp(window.get("start", WEEK["start"]))
    end = parse_timestamp(window.get("end", WEEK["end"]))
    digest = window_digest(start, end, window.get("query", ""), window.get("max_results", 20))
    return PageToken(scope_digest("google\nme\nprimary"), digest, "cursor").encode()


def test_a_page_token_continues_only_the_listing_it_came_from() -> None:
    token = token_for()
    assert isinstance(plan("list_calendar_events", {**WEEK, "page_token": token}), CallPlan)
    # The same instants written another way are the same interval.
    same = {"start": "2026-01-04T23:00:00Z", "end": "2026-01-11T23:00:00+00:00"}
    assert isinstance(plan("list_calendar_events", {**same, "page_token": token}), CallPlan)
    for other in (
        {"start": "2026-01-05T00:00:00Z"},
        {"end": "2026-01-13T00:00:00+01:00"},
        {"query": "standup"},
        {"max_results": 21},
    ):
        error = refused("list_calendar_events", {**WEEK, **other, "page_token": token})
        assert error.fixable_args == ["page_token"]
        assert "another interval, query or max_results" in error.message


def test_the_creation_identity_is_a_google_event_id_fixed_by_the_key() -> None:
    identity = creation_id("wf:call")
    assert identity == creation_id("wf:call")
    assert identity != creation_id("wf:call2")
    assert len(identity) == 52
    assert set(identity) <= set("0123456789abcdefghijklmnopqrstuv")
