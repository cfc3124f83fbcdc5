"""Parsers started ahead (``warm``): each document parsed by its own process, the one that was
waiting; a hung parser killed without harming the next call; no parser left once the tools, or
the worker that built them, close."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from tests.support.children import children
from tests.support.documents import (
    activity_env,
    document_tools,
    hostile,
    read,
    spare_parsers,
    text_pdf,
)
from tests.support.harness import make_config, run_call, running_worker
from tests.support.processes import eventually
from toolcalls.activities.documents.models import ReadDocumentResult
from toolcalls.activities.documents.tools import DocumentTools
from toolcalls.workflows.models.call import CallStatus


async def read_by(tools: DocumentTools, path: Path) -> tuple[ReadDocumentResult, int]:
    """``read_document``'s result and the pid of the parser that answered (its heartbeats)."""
    env = activity_env()
    pids: set[int] = set()
    env.on_heartbeat = lambda *details: pids.add(details[0]["pid"])
    result = await read(tools, path, env)
    assert len(pids) == 1
    return result, pids.pop()


def parser_processes() -> set[int]:
    """Children of this process running the real parser script."""
    found = set()
    for pid in children():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"extract.py") for part in command):
            found.add(pid)
    return found


async def test_each_document_is_parsed_by_the_process_that_waited_for_it(
    root: Path, tools: DocumentTools
) -> None:
    for number in range(3):
        (root / f"{number}.txt").write_text(f"document {number}")
    # The first call starts the pool: its parser and, in the background, the next one.
    assert await spare_parsers(tools) == set()
    _, first = await read_by(tools, root / "0.txt")
    used = [first]
    for number in range(3):
        waiting = await spare_parsers(tools)
        assert len(waiting) == 1
        result, pid = await read_by(tools, root / f"{number}.txt")
        assert result.sections[0].text == f"document {number}"
        # The process started ahead took the document, and exited with its answer.
        assert {pid} == waiting
        assert pid not in children()
        used.append(pid)
    assert len(set(used)) == 4
    assert set(used).isdisjoint(await spare_parsers(tools))


async def test_no_parser_is_kept_when_the_pool_is_empty(root: Path) -> None:
    (root / "a.txt").write_text("text")
    async with document_tools(root, warm_parsers=0) as tools:
        before = children()
        first = await read_by(tools, root / "a.txt")
        second = await read_by(tools, root / "a.txt")
        assert await spare_parsers(tools) == set()
        assert children() == before
    assert first[0] == second[0]
    assert first[1] != second[1]


async def test_a_hung_parser_is_killed_and_the_next_call_gets_a_fresh_one(root: Path) -> None:
    (root / "a.pdf").write_bytes(text_pdf([["x"]]))
    (root / "b.txt").write_text("after the hang")
    before = children()
    async with document_tools(root, parser=hostile("hang-on-pdf"), timeout_seconds=1) as tools:
        env = activity_env()
        hung: set[int] = set()
        env.on_heartbeat = lambda *details: hung.add(details[0]["pid"])
        with pytest.raises(ApplicationError) as caught:
            await read(tools, root / "a.pdf", env)
        assert caught.value.type == "timed_out"
        assert len(hung) == 1
        assert hung.isdisjoint(children())
        waiting = await spare_parsers(tools)
        assert children() - before == waiting
        result, pid = await read_by(tools, root / "b.txt")
        assert result.sections[0].text == "after the hang"
        assert {pid} == waiting
        assert pid not in hung
    assert children() == before


async def test_waiting_parsers_are_killed_when_the_tools_close(root: Path) -> None:
    (root / "a.txt").write_text("text")
    before = children()
    async with document_tools(root, warm_parsers=2) as tools:
        await read(tools, root / "a.txt")
        waiting = await spare_parsers(tools)
        assert len(waiting) == 2
        assert children() - before == waiting
        await tools.aclose()
        assert children() == before
        # A closed pool still serves a call, with a process of its own, and keeps none.
        result, pid = await read_by(tools, root / "a.txt")
        assert result.sections[0].text == "text"
        assert pid not in children()
        assert children() == before
    assert children() == before


async def test_a_parser_killed_while_it_waited_is_replaced(
    root: Path, tools: DocumentTools
) -> None:
    (root / "a.txt").write_text("text")
    await read(tools, root / "a.txt")
    (waiting,) = await spare_parsers(tools)
    os.kill(waiting, signal.SIGKILL)
    await eventually(lambda: waiting not in children(), what="the killed parser reaped")
    assert waiting not in children()
    result, pid = await read_by(tools, root / "a.txt")
    assert result.sections[0].text == "text"
    assert pid != waiting


async def test_the_worker_kills_its_waiting_parsers_when_it_stops(
    client: Client, task_queue: str, root: Path
) -> None:
    (root / "a.txt").write_text("text")
    before = parser_processes()
    config = make_config(task_queue, tools=["read_document"], documents={"roots": [str(root)]})
    async with running_worker(client, config):
        result = await run_call(client, task_queue, "read_document", {"path": f"{root}/a.txt"})
        assert result.status is CallStatus.COMPLETED, result.error
        await eventually(lambda: bool(parser_processes() - before), what="a parser waiting")
        waiting = parser_processes() - before
        assert len(waiting) == 1
    assert parser_processes() - before == set()
    assert waiting.isdisjoint(children())
