"""The progress stream on ToolCallWorkflow: free when unused, deduplicated, bounded, replayable.

Batches are sent here as a tool would, by signal, to a real call waiting in its tool; the log's
rules (positions, retention, pages) are checked on ``ProgressLog`` itself as well.
"""

from __future__ import annotations

import json

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.record_histories import HISTORIES
from tests.support.harness import history_types, make_config, running_worker, start_call, wait_for
from toolcalls.workflows.call.progress import ProgressLog
from toolcalls.workflows.models.call import CallStatus, Phase
from toolcalls.workflows.models.progress import (
    MAX_RETAINED_ITEMS,
    PROGRESS_QUERY,
    PROGRESS_SIGNAL,
    ProgressBatch,
    ProgressEntry,
    ProgressKind,
    ProgressPage,
    ProgressRequest,
)

ALLOW_ALL = {"ceiling": {"default_effect": "allow"}}


def batch(publisher: str, first: int, texts: list[str]) -> ProgressBatch:
    entries = [ProgressEntry(kind=ProgressKind.STDOUT, text=t) for t in texts]
    return ProgressBatch(publisher=publisher, first=first, entries=entries)


def test_positions_already_held_are_skipped() -> None:
    log = ProgressLog()
    assert log.accept(batch("a", 0, ["0", "1", "2"])) == 3
    assert log.accept(batch("a", 0, ["0", "1", "2"])) == 0  # delivered twice
    assert log.accept(batch("a", 2, ["2", "3"])) == 1  # a retried attempt, overlapping
    assert log.accept(batch("b", 0, ["x"])) == 1  # another publisher counts on its own
    page = log.page(ProgressRequest(), ended=False)
    assert [(i.offset, i.text) for i in page.items] == [
        (0, "0"),
        (1, "1"),
        (2, "2"),
        (3, "3"),
        (4, "x"),
    ]
    assert (page.next_offset, page.base_offset, page.missed, page.ended) == (5, 0, 0, False)


def test_the_retention_bound_drops_the_oldest_and_says_so() -> None:
    log = ProgressLog()
    total = MAX_RETAINED_ITEMS + 250
    for first in range(0, total, 1000):
        log.accept(batch("a", first, [str(n) for n in range(first, min(first + 1000, total))]))
    assert len(log.items) == MAX_RETAINED_ITEMS
    page = log.page(ProgressRequest(from_offset=10, limit=3), ended=True)
    assert page.missed == 240
    assert page.base_offset == 250
    assert [i.offset for i in page.items] == [250, 251, 252]
    assert (page.next_offset, page.ended) == (253, False)
    last = log.page(ProgressRequest(from_offset=total - 1), ended=True)
    assert ([i.text for i in last.items], last.ended, last.missed) == ([str(total - 1)], True, 0)
    beyond = log.page(ProgressRequest(from_offset=total + 5), ended=False)
    assert (beyond.items, beyond.next_offset) == ([], total + 5)


async def test_signals_are_deduplicated_by_a_running_call(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue, **ALLOW_ALL)):
        handle = await start_call(client, task_queue, "probe_sleep", {"seconds": 3})
        await wait_for(handle, lambda s: s.phase is Phase.RUNNING)
        for sent in (
            batch("t", 0, ["a", "b"]),
            batch("t", 0, ["a", "b"]),
            batch("t", 1, ["b", "c"]),
        ):
            await handle.signal(PROGRESS_SIGNAL, sent)
        await handle.signal(PROGRESS_SIGNAL, {"not": "a batch"})  # ignored, the call goes on
        page = await handle.query(
            PROGRESS_QUERY, ProgressRequest(from_offset=1), result_type=ProgressPage
        )
        assert [(i.offset, i.text) for i in page.items] == [(1, "b"), (2, "c")]
        assert not page.ended
        result = await handle.result()
        ended = await handle.query(PROGRESS_QUERY, ProgressRequest(), result_type=ProgressPage)
    assert result.status is CallStatus.COMPLETED
    assert [i.text for i in ended.items] == ["a", "b", "c"]
    assert ended.ended


async def test_a_call_without_progress_has_the_history_it_had_before(
    client: Client, task_queue: str
) -> None:
    """The stream adds no command, timer or task: a fresh call's history is the recorded one's."""
    async with running_worker(client, make_config(task_queue)):
        handle = await start_call(client, task_queue, "probe_echo", {"text": "hello"})
        await handle.result()
    recorded = json.loads((HISTORIES / "allowed_activity.json").read_text())
    names = [event["eventType"] for event in recorded["events"]]
    assert [EventType.Name(t) for t in await history_types(handle)] == names
