"""Publishing progress: lines cut from chunks, secrets redacted, batches resent in order.

The sender is the seam: here a function that feeds a real ``ProgressLog`` (what the call keeps),
and that loses or refuses batches as a flaky connection would.
"""

from __future__ import annotations

import asyncio

from toolcalls.activities.progress import LineSplitter, ProgressPublisher, Redactor
from toolcalls.workflows.call.progress import ProgressLog
from toolcalls.workflows.models.progress import (
    MAX_TEXT_CHARS,
    ProgressBatch,
    ProgressKind,
    ProgressRequest,
)

SECRET = "hunter2-very-secret"


def texts(log: ProgressLog) -> list[str]:
    return [item.text for item in log.items]


def test_a_secret_split_across_chunks_and_lines_never_leaves() -> None:
    redact = Redactor({"TOKEN": SECRET, "PATH": "/usr/bin:/bin", "KEY": "line-one-x\nline-two-y"})
    splitter = LineSplitter(ProgressKind.STDOUT, redact)
    entries = splitter.feed(b"before hunt")
    entries += splitter.feed(b"er2-very-secret after\nline-one-x and line-two-y\n/usr/bin\nlast")
    entries += splitter.end()
    assert [e.text for e in entries] == [
        "before [redacted] after",
        "[redacted] and [redacted]",
        "/usr/bin",  # PATH is a location, not a secret
        "last",
    ]


def test_short_values_are_not_secrets() -> None:
    assert Redactor({"DEBUG": "1", "MODE": "fast"}).secrets == []


def test_a_long_line_is_cut_without_splitting_a_secret() -> None:
    redact = Redactor({"TOKEN": SECRET})
    splitter = LineSplitter(ProgressKind.STDERR, redact)
    line = ("x" * (MAX_TEXT_CHARS - 5) + SECRET) * 3
    pieces = []
    for start in range(0, len(line), 1000):  # chunk boundaries fall anywhere
        pieces += splitter.feed(line[start : start + 1000].encode())
    pieces += splitter.end()
    joined = "".join(p.text for p in pieces)
    assert SECRET not in joined
    assert all(SECRET[:8] not in p.text for p in pieces)
    assert joined == line.replace(SECRET, "[redacted]")
    assert all(len(p.text) <= MAX_TEXT_CHARS for p in pieces)


async def test_batches_lost_or_refused_are_sent_again_and_held_once() -> None:
    log = ProgressLog()
    calls = 0

    async def flaky(batch: ProgressBatch) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            log.accept(batch)
            raise ConnectionError("the answer was lost after the call had the batch")
        if calls == 3:
            raise ConnectionError("refused")
        log.accept(batch)

    publisher = ProgressPublisher(flaky, "activity-1", interval=0.01)
    async with publisher:
        for n in range(2500):
            publisher.add(ProgressKind.STDOUT, f"line {n}")
        await asyncio.sleep(0.2)
        publisher.add(ProgressKind.BYTES, done=10)
        publisher.add(ProgressKind.BYTES, done=20, total=40)  # replaces the unsent count
        await asyncio.sleep(0.2)
        publisher.add(ProgressKind.BYTES, done=40, total=40)  # the result has the last count
    assert texts(log)[:2500] == [f"line {n}" for n in range(2500)]
    counts = log.page(ProgressRequest(from_offset=2500), ended=False).items
    assert [(i.kind, i.done, i.total) for i in counts] == [(ProgressKind.BYTES, 20, 40)]
    assert calls >= 5


async def test_a_tool_that_ends_before_the_first_tick_publishes_nothing() -> None:
    sent: list[ProgressBatch] = []

    async def send(batch: ProgressBatch) -> None:
        sent.append(batch)

    async with ProgressPublisher(send, "activity-2", interval=5) as publisher:
        publisher.add(ProgressKind.STDOUT, "quick")
    assert sent == []

    async with ProgressPublisher(send, "activity-3", interval=0.05) as publisher:
        publisher.add(ProgressKind.STDOUT, "first")
        await asyncio.sleep(0.3)
        publisher.add(ProgressKind.STDOUT, "last")  # after a tick: the rest is sent at the end
    assert [[e.text for e in b.entries] for b in sent] == [["first"], ["last"]]
