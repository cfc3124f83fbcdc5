"""Interrupted changes: a worker SIGKILLed mid-write, and the records a restart settles."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.file_writes import Files, mode, run
from toolcalls.activities.files import atomic
from toolcalls.activities.files.checkpoints import ChangeState
from toolcalls.activities.files.settings import MAX_WRITE_BYTES
from toolcalls.activities.files.write_models import ChangeArgs, ReplaceFileArgs

PROJECT = Path(__file__).resolve().parents[3]
OLD = b"old line\n" * 50_000


def crash_write(files: Files, tool: str, path: str, stall: str, until: str) -> None:
    """Run a 1 MiB write in another process, stalled at ``stall``; SIGKILL it at ``until``."""
    files.store.close()  # the store has one writer: the child
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.file_write_crash",
            str(files.root),
            str(files.db),
            tool,
            path,
            str(MAX_WRITE_BYTES),
            stall,
        ],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stderr is not None
    try:
        seen = []
        for line in child.stdout:
            seen.append(line.strip())
            if line.startswith(until):
                break
        else:
            raise AssertionError(f"the writer ended early: {seen} {child.stderr.read()}")
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(10)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL


@pytest.mark.parametrize("tool", ["replace_file", "create_file"])
def test_sigkill_mid_write_leaves_the_old_file_and_a_restart_cleans_up(
    files: Files, tool: str
) -> None:
    target = files.root / "big.txt"
    if tool == "replace_file":
        target.write_bytes(OLD)
        os.chmod(target, 0o644)
    crash_write(files, tool, str(target), stall="write", until="chunk 524288")
    # Killed halfway through the temporary file: the target is untouched, the part is aside.
    if tool == "replace_file":
        assert target.read_bytes() == OLD
    else:
        assert not target.exists()
    [leftover] = files.leftovers()
    assert 0 < (files.root / leftover).stat().st_size < MAX_WRITE_BYTES
    tools = files.reopen()
    [settled] = tools.recovered
    assert settled.state is ChangeState.FAILED
    assert settled.detail == "write interrupted before the file was changed"
    assert files.leftovers() == []
    if tool == "replace_file":
        assert target.read_bytes() == OLD
        assert mode(target) == 0o644
    else:
        assert not target.exists()


@pytest.mark.parametrize("tool", ["replace_file", "create_file"])
def test_sigkill_after_the_swap_leaves_the_new_file_and_an_uncertain_record(
    files: Files, tool: str
) -> None:
    target = files.root / "big.txt"
    if tool == "replace_file":
        target.write_bytes(OLD)
    crash_write(files, tool, str(target), stall="sync", until="swapped")
    assert target.read_bytes() == b"n" * MAX_WRITE_BYTES
    tools = files.reopen()
    [settled] = tools.recovered
    assert settled.state is ChangeState.UNCERTAIN
    assert settled.detail == "write interrupted; the file now holds what the change wrote"
    assert files.leftovers() == []
    assert target.read_bytes() == b"n" * MAX_WRITE_BYTES  # nothing is undone by guessing


async def test_a_restart_settles_an_interrupted_restore(files: Files) -> None:
    target = files.root / "r.txt"
    target.write_text("before")
    result = await run(files.tools.replace_file, ReplaceFileArgs(path=str(target), content="after"))
    # A restore that died after its record said restoring and its temporary file was begun.
    temp = atomic.temp_name()
    (files.root / temp).write_text("bef")
    files.store.transition(
        result.change_id, ChangeState.APPLIED, ChangeState.RESTORING, temp_name=temp
    )
    tools = files.reopen()
    assert [(r.change_id, r.state) for r in tools.recovered] == [
        (result.change_id, ChangeState.APPLIED)
    ]
    assert files.leftovers() == []
    assert target.read_text() == "after"
    # Certainly not restored, so still restorable.
    await run(tools.restore_change, ChangeArgs(change_id=result.change_id))
    assert target.read_text() == "before"


async def test_a_restore_that_may_have_happened_is_uncertain(files: Files) -> None:
    target = files.root / "r.txt"
    target.write_text("before")
    result = await run(files.tools.replace_file, ReplaceFileArgs(path=str(target), content="after"))
    files.store.transition(result.change_id, ChangeState.APPLIED, ChangeState.RESTORING)
    target.write_text("before")  # the swap happened, the record was never updated
    tools = files.reopen()
    [settled] = tools.recovered
    assert settled.state is ChangeState.UNCERTAIN
    assert (
        settled.detail == "restore interrupted; the file now holds what it held before the change"
    )
    preview = await run(tools.preview_change, ChangeArgs(change_id=result.change_id))
    assert (preview.uncertain, preview.restorable) == (True, False)


async def test_a_write_interrupted_where_it_cannot_be_inspected_is_uncertain(
    files: Files,
) -> None:
    (files.root / "gone").mkdir()
    target = files.root / "gone" / "f"
    target.write_text("a")
    written = await run(files.tools.replace_file, ReplaceFileArgs(path=str(target), content="b"))
    record = files.store.get(written.change_id)
    assert record is not None
    # A second write of the same file, left prepared; then the directory disappears.
    files.store.begin(replace(record, change_id="chg-" + "2" * 32, state=ChangeState.PREPARED))
    target.unlink()
    (files.root / "gone").rmdir()
    tools = files.reopen()
    [settled] = tools.recovered
    assert settled.state is ChangeState.UNCERTAIN
    assert settled.detail == "write interrupted; cannot inspect: does not exist"
