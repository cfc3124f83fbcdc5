"""``read_document`` publishes the pages it has read while the parser process reads a long PDF.

A real 300-page PDF (each page inked with a few hundred strokes, so that reading it takes
seconds) is read through a real ``ToolCallWorkflow``: a reader following the call sees growing
``pages`` counts with the page total, then the unchanged result (``search_document`` on it
counts its pages too). A short document publishes nothing. A parser that sends garbage,
oversized and lying counts on its socket neither fails the call nor gets a lie into its stream.
The heartbeat carries the counts too. The two ends of the socket (``pages``, ``progress``) are
tested on a real socket pair.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.documents import (
    activity_env,
    document_tools,
    hostile,
    pdf_pages,
    read,
    text_content,
    text_pdf,
)
from tests.support.harness import make_config, running_worker, start_call
from tests.support.hostile_parser import LIES, TRUE_COUNT
from tests.support.tools import ALL_FAMILIES, ProbeTools
from toolcalls.activities.documents import pages, progress
from toolcalls.activities.documents.tools import DocumentTools
from toolcalls.worker.config import Config
from toolcalls.worker.run import build_worker
from toolcalls.workflows.models.call import CallStatus, ToolCallResult
from toolcalls.workflows.models.progress import ProgressItem, ProgressKind
from toolcalls.workflows.reach.follow import FollowEvent, follow

PAGES = 300
LINE = "the quick brown fox jumps over the lazy dog"


def long_pdf(count: int = PAGES) -> bytes:
    """``count`` pages of five lines each, under 400 strokes of ink that cost the parser time
    but no characters."""
    ink = b"\n".join([b"0.5 g 72 72 m 540 720 l S"] * 400)
    return pdf_pages(
        [ink + b"\n" + text_content([f"page {n} {LINE}"] * 5) for n in range(1, count + 1)]
    )


def config(task_queue: str, root: Path) -> Config:
    documents: dict[str, Any] = {"roots": [str(root)], "max_sections": 1_000}
    documents["max_output_chars"] = 100_000
    return make_config(task_queue, tools=["read_document", "search_document"], documents=documents)


def counts(events: list[FollowEvent]) -> list[ProgressItem]:
    return [event for event in events if isinstance(event, ProgressItem)]


async def test_a_long_pdf_shows_its_pages_as_they_are_read(
    client: Client, task_queue: str, root: Path
) -> None:
    (root / "long.pdf").write_bytes(long_pdf())
    (root / "short.pdf").write_bytes(text_pdf([["one"], ["two"]]))
    async with running_worker(client, config(task_queue, root)):
        handle = await start_call(client, task_queue, "read_document", {"path": f"{root}/long.pdf"})
        events = await asyncio.wait_for(_follow(client, handle.id), 120)
        short = await start_call(client, task_queue, "read_document", {"path": f"{root}/short.pdf"})
        quick = await short.result()
        search = await start_call(
            client,
            task_queue,
            "search_document",
            {"path": f"{root}/long.pdf", "query": "PAGE 299 THE", "max_results": 100},
        )
        searched = await asyncio.wait_for(_follow(client, search.id), 120)

    result = events[-1]
    assert isinstance(result, ToolCallResult)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output is not None
    sections = result.output["sections"]
    assert [s["location"] for s in sections] == [f"page {n}" for n in range(1, PAGES + 1)]
    assert sections[41]["text"] == "\n".join([f"page 42 {LINE}"] * 5)
    assert result.output["truncated"] is False
    seen = counts(events)
    assert {item.kind for item in seen} == {ProgressKind.PAGES}
    assert {item.total for item in seen} == {PAGES}
    done = [item.done or 0 for item in seen]
    assert done == sorted(set(done))  # growing, each count once
    assert all(0 < count <= PAGES for count in done)
    assert 2 <= len(done) <= PAGES // 10  # one count a batch, never one a page
    # The stream sits beside the result: the call's history holds the batches as signals.
    signaled = await _signals(handle)
    assert 1 <= signaled <= PAGES // 10

    assert quick.status is CallStatus.COMPLETED
    assert quick.output is not None
    assert [s["text"] for s in quick.output["sections"]] == ["one", "two"]
    assert await _signals(short) == 0  # read before the first tick: nothing published

    found = searched[-1]
    assert isinstance(found, ToolCallResult)
    assert found.output is not None
    assert {m["location"] for m in found.output["matches"]} == {"page 299"}
    assert {(i.kind, i.total) for i in counts(searched)} == {(ProgressKind.PAGES, PAGES)}


async def test_a_lying_parser_neither_fails_the_call_nor_gets_a_lie_in(
    client: Client, task_queue: str, root: Path
) -> None:
    (root / "a.pdf").write_bytes(text_pdf([["alpha"], ["beta"], ["gamma"]]))
    async with document_tools(root, parser=hostile("lie-pages")) as tools:
        worker = build_worker(
            client,
            config(task_queue, root),
            families=ALL_FAMILIES,
            instances={DocumentTools: tools, ProbeTools: ProbeTools()},
        )
        async with worker:
            handle = await start_call(
                client, task_queue, "read_document", {"path": f"{root}/a.pdf"}
            )
            events = await asyncio.wait_for(_follow(client, handle.id), 60)

    result = events[-1]
    assert isinstance(result, ToolCallResult)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output is not None
    assert [s["text"] for s in result.output["sections"]] == ["alpha", "beta", "gamma"]
    assert [(i.kind, i.done, i.total) for i in counts(events)] == [
        (ProgressKind.PAGES, TRUE_COUNT["done"], TRUE_COUNT["total"])
    ]


async def test_the_heartbeat_carries_the_pages_read(root: Path) -> None:
    (root / "long.pdf").write_bytes(long_pdf())
    env = activity_env(heartbeat=0.3)
    beats: list[dict[str, Any]] = []
    env.on_heartbeat = lambda *details: beats.append(details[0])
    async with document_tools(root, max_sections=1_000, max_output_chars=100_000) as tools:
        result = await read(tools, root / "long.pdf", env)
    assert len(result.sections) == PAGES
    counted = [(beat["pages"], beat["total_pages"]) for beat in beats if "pages" in beat]
    assert counted
    assert {total for _, total in counted} == {PAGES}
    done = [count for count, _ in counted]
    assert done == sorted(done)
    assert len(set(done)) >= 2
    assert all(0 < count <= PAGES for count in done)


def test_only_well_formed_growing_counts_get_through() -> None:
    assert [pages.page_count(lie) for lie in LIES] == [
        None,
        None,
        None,
        None,
        (2, 3),
        (1, 3),  # well-formed: ``read_pages`` drops it for going backwards
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    assert pages.page_count(b'{"done": 0, "total": 0}') == (0, 0)
    assert pages.page_count(b"") is None
    assert pages.page_count(b"[" * 60) is None


async def test_the_worker_reads_counts_until_the_parser_closes_its_end() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    reported: list[tuple[int, ...]] = []
    with ours, theirs:
        for message in [
            *LIES,
            json.dumps({"done": 3, "total": 3}).encode(),
            json.dumps({"done": 3, "total": 3}).encode(),  # no news: not reported again
        ]:
            theirs.send(message)
        theirs.shutdown(socket.SHUT_WR)
        reader = progress.read_pages(
            ours, lambda done, total: reported.append((done, total)), pause=0
        )
        await asyncio.wait_for(reader, 10)
    assert reported == [(2, 3), (3, 3)]


def test_the_parser_reports_at_most_every_interval_and_never_waits() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        reporter = pages.PageReporter(theirs, interval=0.05)
        started = time.monotonic()
        done = 0
        while time.monotonic() - started < 0.5:
            done += 1
            reporter(min(done, pages.MAX_PAGES), pages.MAX_PAGES)
        elapsed = time.monotonic() - started
        ours.setblocking(False)
        received = []
        while True:
            try:
                received.append(pages.page_count(ours.recv(pages.MAX_MESSAGE_BYTES + 1)))
            except BlockingIOError:
                break
        assert done > 100  # many pages went by...
        assert 1 <= len(received) <= elapsed / 0.05 + 1  # ...and few reports
        assert all(count is not None and count[1] == pages.MAX_PAGES for count in received)
        # Nobody reading and the socket full: a report is dropped, never waited for.
        flood = pages.PageReporter(theirs, interval=0)
        started = time.monotonic()
        for n in range(100_000):
            flood(n, pages.MAX_PAGES)
        assert time.monotonic() - started < 30


async def _follow(client: Client, workflow_id: str) -> list[FollowEvent]:
    return [event async for event in follow(client, workflow_id)]


async def _signals(handle: Any) -> int:
    history = await handle.fetch_history()
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    return sum(1 for event in history.events if event.event_type == signaled)
