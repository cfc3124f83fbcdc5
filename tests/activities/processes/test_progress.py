"""A running command's output as a live progress stream, through a real ToolCallWorkflow.

A shell prints 10,000 lines over a few seconds; a reader follows them live, in order, while they
are published in batches; afterwards the stream is read again from an offset, the retention bound
holds and the dropped items are reported; a configured environment value never appears in an item
nor in any recorded progress signal.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.harness import make_config, running_worker, start_call, worker_process
from tests.support.processes import SYSTEM_PATH
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.worker.config import Config
from toolcalls.workflows.models.call import CallStatus, ToolCallResult
from toolcalls.workflows.models.progress import (
    MAX_RETAINED_ITEMS,
    PROGRESS_SIGNAL,
    ProgressItem,
    ProgressKind,
)
from toolcalls.workflows.reach.follow import FollowEvent, ProgressGap, follow

SECRET = "s3cr3t-Vd9q-token"
LINES = 10_000
SCRIPT = (
    'echo "token=$API_TOKEN" >&2; i=0; while [ $i -lt 10000 ]; do echo "line $i"; i=$((i+1)); '
    "if [ $((i % 1000)) -eq 0 ]; then sleep 0.3; fi; done; echo done >&2"
)
"""About three seconds of output, in bursts of a thousand lines."""
PACED_SCRIPT = (
    'echo "token=$API_TOKEN" >&2; i=0; while [ $i -lt 10000 ]; do echo "line $i"; i=$((i+1)); '
    'if [ $((i % 1000)) -eq 0 ]; then n=0; while [ ! -e "seen-$i" ] && [ $n -lt 400 ]; do '
    "sleep 0.05; n=$((n+1)); done; fi; done; echo done >&2"
)
"""The same output, each burst of a thousand lines waiting until the reader has seen the one
before (it leaves ``seen-N`` in the command's folder): a live reader that keeps up must see every
line however busy the machine is, while a reader slower than the retention bound is another test.
"""


def acknowledge(folder: Path, line: str) -> None:
    """Leave ``seen-N`` in ``folder`` (``PACED_SCRIPT``'s) once ``line`` is ``line N - 1``, the
    last of a burst."""
    if line.startswith("line "):
        seen = int(line.removeprefix("line ")) + 1
        if seen % 1000 == 0:
            (folder / f"seen-{seen}").touch()


async def follow_acknowledging(client: Client, workflow_id: str, folder: Path) -> list[FollowEvent]:
    """Every event of the call from offset 0, acknowledging each burst of lines."""
    events: list[FollowEvent] = []
    async for event in follow(client, workflow_id, 0):
        events.append(event)
        if isinstance(event, ProgressItem):
            acknowledge(folder, event.text)
    return events


def config(task_queue: str, tmp_path: Path, root: Path, **sections: Any) -> Config:
    return make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "run_shell"],
        state_dir=str(tmp_path / "state"),
        ceiling={"default_effect": "allow"},
        shell={
            "cwd": str(root),
            "env": {"PATH": SYSTEM_PATH, "API_TOKEN": SECRET},
            "kill_grace_seconds": 0.5,
            "timeout_seconds": 60,
            "max_output_bytes": 1_048_576,
        },
        **sections,
    )


async def collect(events: Any) -> list[FollowEvent]:
    return [event async for event in events]


def items(events: list[FollowEvent]) -> list[ProgressItem]:
    return [e for e in events if isinstance(e, ProgressItem)]


async def test_a_followed_command_shows_every_line_in_order_then_its_result(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "run_shell", {"command": PACED_SCRIPT})
        live = await asyncio.wait_for(follow_acknowledging(client, handle.id, root), 90)
        result = await handle.result()

    assert result.status is CallStatus.COMPLETED
    assert live[-1] == result
    assert not [e for e in live if isinstance(e, ProgressGap)]
    seen = items(live)
    assert [i.offset for i in seen] == list(range(len(seen)))
    stdout = [i.text for i in seen if i.kind is ProgressKind.STDOUT]
    assert stdout == [f"line {n}" for n in range(LINES)]
    stderr = [i.text for i in seen if i.kind is ProgressKind.STDERR]
    assert stderr == ["token=[redacted]", "done"]
    # The result is the command's, unchanged: the stream is beside it.
    assert isinstance(result.output, dict)
    assert result.output["stdout"].splitlines() == stdout
    assert SECRET in result.output["stderr"]

    # Batched: a few dozen signals for 10,002 items, never one per line.
    history = await handle.fetch_history()
    signals = [
        e.workflow_execution_signaled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    assert {s.signal_name for s in signals} == {PROGRESS_SIGNAL}
    assert 2 <= len(signals) <= 60
    # The secret is in no recorded batch: not the value, not a piece of it.
    for signaled in signals:
        raw = b"".join(p.data for p in signaled.input.payloads)
        assert SECRET.encode() not in raw
        assert SECRET[:6].encode() not in raw

    # After the end, without a live page: the history's stream, read again from offsets.
    total = len(seen)
    again = await collect(follow(client, handle.id, 0))
    gap, *rest = again
    assert gap == ProgressGap(from_offset=0, missed=total - MAX_RETAINED_ITEMS)
    kept = items(rest)
    assert [i.offset for i in kept] == list(range(total - MAX_RETAINED_ITEMS, total))
    assert kept == seen[-MAX_RETAINED_ITEMS:]
    assert rest[-1] == result
    start = total - 10
    tail = await collect(follow(client, handle.id, start))
    assert [i.offset for i in items(tail)] == list(range(start, total))
    assert isinstance(tail[-1], ToolCallResult)


async def test_a_reader_that_comes_back_late_is_told_what_it_missed(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "run_shell", {"command": SCRIPT})
        first: list[ProgressItem] = []
        async for event in follow(client, handle.id, 0):
            assert isinstance(event, ProgressItem)
            first.append(event)
            if len(first) == 5:
                break  # the reader goes away (a client restart) at offset 5
        await handle.result()  # ... and is away while the rest is published
        resumed = await collect(follow(client, handle.id, first[-1].offset + 1))
    assert [i.offset for i in first] == list(range(5))
    gap = resumed[0]
    assert isinstance(gap, ProgressGap)
    assert gap.from_offset == 5
    following = items(resumed)
    assert following[0].offset == 5 + gap.missed
    assert "done" in [i.text for i in following]
    assert len(following) == MAX_RETAINED_ITEMS


WORKER_SCRIPT = """
import asyncio, sys
from pathlib import Path
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from tests.support.harness import running_worker
from tests.activities.processes.test_progress import config, FAST_HEARTBEAT

address, queue, tmp, root = sys.argv[1:5]

async def main():
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    async with running_worker(client, config(queue, Path(tmp), Path(root), **FAST_HEARTBEAT)):
        await asyncio.Event().wait()

asyncio.run(main())
"""
FAST_HEARTBEAT = {
    "activities": {
        "timeouts": {"run_shell": {"start_to_close_seconds": 90, "heartbeat_seconds": 2}}
    }
}
SLOW_SCRIPT = (
    'i=0; while [ $i -lt 10000 ]; do echo "line $i"; i=$((i+1)); '
    "if [ $((i % 500)) -eq 0 ]; then sleep 0.3; fi; done"
)
"""Six seconds of output: the worker is killed in the middle of it."""


async def test_a_reader_follows_across_a_worker_killed_mid_run(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    seen: list[FollowEvent] = []
    async with worker_process(
        WORKER_SCRIPT, client, task_queue, str(tmp_path), str(root)
    ) as process:
        handle = await start_call(client, task_queue, "run_shell", {"command": SLOW_SCRIPT})

        async def reader() -> None:
            async for event in follow(client, handle.id, 0):
                seen.append(event)

        reading = asyncio.create_task(reader())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while len(seen) < 1500:
            assert process.returncode is None, "the worker process exited"
            assert loop.time() < deadline, "no progress came"
            await asyncio.sleep(0.05)
    before = len(seen)
    await asyncio.sleep(3)  # no worker: the reader waits, and loses nothing
    async with running_worker(client, config(task_queue, tmp_path, root, **FAST_HEARTBEAT)):
        await asyncio.wait_for(reading, 60)

    result = seen[-1]
    assert isinstance(result, ToolCallResult)
    assert result.status is CallStatus.UNCERTAIN  # a command is a write: never run again
    lines = items(seen)
    assert len(lines) >= before - 1
    assert not [e for e in seen if isinstance(e, ProgressGap)]
    assert [i.offset for i in lines] == list(range(len(lines)))
    assert [i.text for i in lines] == [f"line {n}" for n in range(len(lines))]
    assert len(lines) < LINES, "the kill came too late to test anything"
    # What the reader saw is what the call kept: a new reader sees the same from history.
    again = items(await collect(follow(client, handle.id, 0)))
    assert again == lines


async def test_a_short_command_publishes_nothing(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    """Done within the first publishing interval: its result holds everything, no signal."""
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "run_shell", {"command": "echo hi"})
        result = await handle.result()
        events = await collect(follow(client, handle.id))
    assert result.status is CallStatus.COMPLETED
    assert events == [result]
    history = await handle.fetch_history()
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    assert signaled not in [event.event_type for event in history.events]


async def test_a_lost_workers_last_heartbeat_holds_no_secret(
    client: Client, task_queue: str, tmp_path: Path, root: Path
) -> None:
    """The tail of output a heartbeat carries becomes the uncertain result, in history."""
    async with worker_process(WORKER_SCRIPT, client, task_queue, str(tmp_path), str(root)):
        script = 'echo "token=$API_TOKEN"; sleep 30'
        handle = await start_call(client, task_queue, "run_shell", {"command": script})
        async for event in follow(client, handle.id):
            assert isinstance(event, ProgressItem)
            assert event.text == "token=[redacted]"
            break
        await asyncio.sleep(2.5)  # a heartbeat with the tail goes out
    async with running_worker(client, config(task_queue, tmp_path, root, **FAST_HEARTBEAT)):
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.UNCERTAIN
    assert result.output == {"stdout_bytes": 24, "stderr_bytes": 0, "tail": "token=[redacted]\n"}
    history = (await handle.fetch_history()).to_json()
    assert SECRET not in history
