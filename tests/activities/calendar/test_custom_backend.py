"""A deployment's own ``CalendarBackend``, loaded from ``[calendar] backend`` by import path.

The tools check its arguments before it is called, bind its page tokens to the listing, give it
the call's ``creation_id`` when it takes one, bound its answers to the documented shape, and
report its own exceptions by type only.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tests.support import calendar_backend
from tests.support.calendars import call, run
from toolcalls.activities.calendar.backend import BackendLoadError, load_backend
from toolcalls.activities.calendar.models import CreateCalendarEventArgs, ListCalendarEventsArgs
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.calendar.tokens import creation_id
from toolcalls.activities.calendar.tools import CalendarTools
from toolcalls.workflows.models.call import ErrorCode

MODULE = "tests.support.calendar_backend"
WEEK = {"start": "2026-01-05T00:00:00+01:00", "end": "2026-01-12T00:00:00+01:00"}
LUNCH = {"title": "Lunch", "start": "2026-01-07T12:00:00+01:00", "end": "2026-01-07T13:00:00+01:00"}


def custom(attribute: str, **options: Any) -> CalendarTools:
    return CalendarTools(
        CalendarSettings(backend=f"{MODULE}:{attribute}", options=options), environ={}
    )


async def failure(coroutine: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        await coroutine
    return raised.value


async def test_a_class_is_built_with_the_options_and_pages_are_bound() -> None:
    tools = custom("MemoryCalendar", name="team")
    memory = calendar_backend.CALENDARS["team"]
    for hour in range(9, 14):
        args = {**LUNCH, "title": f"Slot {hour}", "start": f"2026-01-07T{hour:02d}:00:00+01:00"}
        args["end"] = f"2026-01-07T{hour:02d}:30:00+01:00"
        await run(tools.create_calendar_event, CreateCalendarEventArgs(**args), call(f"wf:{hour}"))
    first = await run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK, max_results=3))
    second = await run(
        tools.list_calendar_events,
        ListCalendarEventsArgs(**WEEK, max_results=3, page_token=first.next_page_token),
    )
    assert [e["title"] for e in first.items + second.items] == [f"Slot {h}" for h in range(9, 14)]
    assert second.next_page_token is None
    # The backend saw its own token back, and the interval as given.
    assert memory.calls[-1] == (
        "list_events",
        {"start": WEEK["start"], "end": WEEK["end"], "page_token": "3"},
    )
    other = custom("make_memory", name="other")
    error = await failure(
        run(
            other.list_calendar_events,
            ListCalendarEventsArgs(**WEEK, max_results=3, page_token=first.next_page_token),
        )
    )
    assert error.details[0]["fixable_args"] == ["page_token"]


async def test_the_creation_id_reaches_a_backend_that_takes_it() -> None:
    tools = custom("MemoryCalendar", name="ids")
    memory = calendar_backend.CALENDARS["ids"]
    first = await run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH), call("w:c"))
    again = await run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH), call("w:c"))
    assert first.creation_id == again.creation_id == creation_id("w:c")
    assert len(memory.events) == 1
    assert memory.events[0]["creation_id"] == creation_id("w:c")
    assert first.id == again.id == "mem-1"


async def test_a_backend_of_the_spec_protocol_alone_is_called_without_it() -> None:
    tools = custom("SpecOnlyCalendar")
    created = await run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH))
    assert (created.id, created.event) == ("spec-1", {"id": "spec-1", "title": "Lunch"})
    preview = await run(tools.prepare_create_calendar_event, CreateCalendarEventArgs(**LUNCH))
    assert preview.preview[0].data["creation_id_is"].startswith("none")


async def test_its_exceptions_are_reported_by_type_only() -> None:
    tools = custom("BrokenCalendar", mode="raise")
    listed = await failure(run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert listed.type == ErrorCode.EXECUTION_FAILED.value
    assert "RuntimeError" in listed.message
    assert "s3cr3t" not in listed.message
    created = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    assert created.type == ErrorCode.UNCERTAIN.value
    assert created.details[0]["output"] == {"creation_id": creation_id("wf-1:call-1")}


@pytest.mark.parametrize(("mode", "says"), [("too_many", "over max_results"), ("odd", "json")])
async def test_answers_outside_the_contract_are_refused(mode: str, says: str) -> None:
    tools = custom("BrokenCalendar", mode=mode)
    error = await failure(run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert error.type == ErrorCode.EXECUTION_FAILED.value
    assert says in error.message


async def test_a_creation_without_an_id_is_uncertain() -> None:
    tools = custom("BrokenCalendar", mode="odd")
    error = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    assert error.type == ErrorCode.UNCERTAIN.value
    assert "returned no id" in error.message


@pytest.mark.parametrize(
    ("path", "options", "says"),
    [
        ("tests.support.no_such_module:X", {}, "cannot import tests.support.no_such_module"),
        (f"{MODULE}:Missing", {}, "has no attribute Missing"),
        (f"{MODULE}:NotABackend", {}, "has no list_events and create_event"),
        (f"{MODULE}:MemoryCalendar", {"colour": "red"}, "raised TypeError"),
    ],
)
def test_a_backend_that_cannot_be_loaded_says_why(
    path: str, options: dict[str, Any], says: str
) -> None:
    with pytest.raises(BackendLoadError, match=says):
        load_backend(path, options)


async def test_timeout_seconds_bounds_the_whole_operation() -> None:
    tools = CalendarTools(
        CalendarSettings(
            backend=f"{MODULE}:SlowCalendar", options={"seconds": 30}, timeout_seconds=0.3
        ),
        environ={},
    )
    listed = await failure(run(tools.list_calendar_events, ListCalendarEventsArgs(**WEEK)))
    assert (listed.type, listed.non_retryable) == (ErrorCode.TIMED_OUT.value, False)
    created = await failure(run(tools.create_calendar_event, CreateCalendarEventArgs(**LUNCH)))
    assert created.type == ErrorCode.UNCERTAIN.value
    assert created.details[0]["output"] == {"creation_id": creation_id("wf-1:call-1")}
