"""``toolcalls watch`` as a real process against the session's dev server and a real worker.

A shell prints 10,000 lines: ``watch`` started while it runs prints them in order on stdout (its
stderr on stderr, the secret redacted) and exits 0; after the end it reads the stream again from
history, from an offset, or reports the items the retention bound dropped.
"""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path

from temporalio.client import Client

from tests.activities.processes.test_progress import LINES, PACED_SCRIPT, acknowledge, config
from tests.support.harness import decision, pending_approval, running_worker, start_call
from tests.worker.support import command, toolcalls
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CapabilityPolicy, Effect
from toolcalls.workflows.models.progress import MAX_RETAINED_ITEMS

NEEDS_APPROVAL = CapabilityPolicy(tools={"run_shell": Effect.REQUIRE_APPROVAL})


async def test_watch_prints_the_output_live_then_again_from_an_offset(
    client: Client, address: str, task_queue: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    async with running_worker(client, config(task_queue, tmp_path, root)):
        # The command waits for an approval, so that the watch is there before it prints.
        handle = await start_call(
            client, task_queue, "run_shell", {"command": PACED_SCRIPT}, policy=NEEDS_APPROVAL
        )
        pending = await pending_approval(handle)
        # Each burst of 1,000 lines waits for the watch to have printed the one before, so
        # however busy the machine, a reader that keeps up is what this test watches.
        watching = asyncio.create_task(
            toolcalls(
                tmp_path,
                *("watch", handle.id, "--address", address),
                timeout=120,
                on_line=functools.partial(acknowledge, root),
            )
        )
        await asyncio.sleep(3)
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        live = await watching
        assert live.code == 0, live.stderr
        assert live.stdout.splitlines() == [f"line {n}" for n in range(LINES)]
        assert live.stderr.splitlines() == [
            "token=[redacted]",
            "done",
            f"toolcalls: call {handle.id}: completed",
        ]

        total = LINES + 2
        tail = await command(tmp_path, address, "watch", handle.id, "--from", "9995", "--json")
        assert tail.code == 0, tail.stderr
        rows = [json.loads(line) for line in tail.stdout.splitlines()]
        assert [row["item"]["offset"] for row in rows[:-1]] == list(range(9995, total))
        assert rows[-1]["result"]["status"] == "completed"

        again = await command(tmp_path, address, "watch", handle.id)
    assert again.code == 0, again.stderr
    first_kept = total - MAX_RETAINED_ITEMS
    assert again.stderr.splitlines()[0] == (
        f"toolcalls: watch {handle.id}: {first_kept} items before offset {first_kept} were "
        "dropped (the call keeps only its latest); continuing there"
    )
    shown = again.stdout.splitlines()
    assert shown[-1] == f"line {LINES - 1}"
    assert len(shown) <= MAX_RETAINED_ITEMS


async def test_watch_exit_codes(
    client: Client, address: str, task_queue: str, tmp_path: Path
) -> None:
    missing = await command(tmp_path, address, "watch", "no-such-call")
    assert missing.code == 1
    assert missing.stderr.strip() == "toolcalls: watch: no call has id 'no-such-call'"
    bad = await command(tmp_path, address, "watch", "x", "--from", "-3")
    assert bad.code == 2
    assert "'-3' is not an offset" in bad.stderr

    root = tmp_path / "root"
    root.mkdir()
    async with running_worker(client, config(task_queue, tmp_path, root)):
        handle = await start_call(client, task_queue, "no_such_tool", {})
        failed = await command(tmp_path, address, "watch", handle.id)
    assert failed.code == 1
    assert failed.stdout == ""
    assert failed.stderr.startswith(f"toolcalls: call {handle.id}: ")
