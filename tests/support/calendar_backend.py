"""A deployment's own calendar backend, as ``[calendar] backend = "module:attribute"`` names it:
events in memory, the spec's ``CalendarBackend`` protocol plus the ``creation_id`` keyword."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

CALENDARS: dict[str, MemoryCalendar] = {}
"""Every calendar built, by name, so a test can look inside the one a worker built."""


class MemoryCalendar:
    """Events in a list; a creation under a known ``creation_id`` returns the first event."""

    query_help = "Memory calendar: a substring of the title."

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.calendar = name
        self.events: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        CALENDARS[name] = self

    async def list_events(
        self, *, start: str, end: str, query: str, max_results: int, page_token: str | None
    ) -> dict[str, Any]:
        self.calls.append(("list_events", {"start": start, "end": end, "page_token": page_token}))
        low, high = datetime.fromisoformat(start), datetime.fromisoformat(end)
        found = [
            event
            for event in self.events
            if datetime.fromisoformat(event["start"]) < high
            and datetime.fromisoformat(event["end"]) > low
            and query.lower() in event["title"].lower()
        ]
        offset = int(page_token or 0)
        page = found[offset : offset + max_results]
        more = offset + max_results < len(found)
        return {"items": page, "next_page_token": str(offset + max_results) if more else None}

    async def create_event(
        self, *, title: str, start: str, end: str, description: str, location: str, creation_id: str
    ) -> dict[str, Any]:
        self.calls.append(("create_event", {"title": title, "creation_id": creation_id}))
        for event in self.events:
            if event["creation_id"] == creation_id:
                return event
        event = {
            "id": f"mem-{len(self.events) + 1}",
            "title": title,
            "start": start,
            "end": end,
            "description": description,
            "location": location,
            "creation_id": creation_id,
        }
        self.events.append(event)
        return event

    async def find_event(self, *, creation_id: str) -> dict[str, Any] | None:
        self.calls.append(("find_event", {"creation_id": creation_id}))
        return next((e for e in self.events if e["creation_id"] == creation_id), None)


class SpecOnlyCalendar:
    """The spec's protocol exactly: ``create_event`` takes no ``creation_id``."""

    async def list_events(
        self, *, start: str, end: str, query: str, max_results: int, page_token: str | None
    ) -> dict[str, Any]:
        return {"items": [], "next_page_token": None}

    async def create_event(
        self, *, title: str, start: str, end: str, description: str, location: str
    ) -> dict[str, Any]:
        return {"id": "spec-1", "title": title}


class BrokenCalendar:
    """A backend whose service fails, and whose answers break the contract."""

    def __init__(self, mode: str = "raise") -> None:
        self.mode = mode

    async def list_events(self, **kwargs: Any) -> dict[str, Any]:
        if self.mode == "raise":
            raise RuntimeError("upstream said: token s3cr3t for alice is invalid")
        if self.mode == "too_many":
            return {"items": [{"id": str(n)} for n in range(kwargs["max_results"] + 1)]}
        return {"items": [{"when": datetime(2026, 1, 1)}], "next_page_token": None}

    async def create_event(self, **kwargs: Any) -> dict[str, Any]:
        if self.mode == "raise":
            raise RuntimeError("upstream said: token s3cr3t for alice is invalid")
        return {"title": "no id"}


class NotABackend:
    def list_events(self) -> None:
        """Not async, and no create_event."""


def make_memory(name: str) -> MemoryCalendar:
    """A factory, as a deployment might name one."""
    return MemoryCalendar(name)


class SlowCalendar:
    """A backend whose service never answers in time."""

    def __init__(self, seconds: float = 30) -> None:
        self.seconds = seconds

    async def list_events(self, **kwargs: Any) -> dict[str, Any]:
        await asyncio.sleep(self.seconds)
        return {"items": [], "next_page_token": None}

    async def create_event(self, **kwargs: Any) -> dict[str, Any]:
        await asyncio.sleep(self.seconds)
        return {"id": "late"}
