"""How close is ``read_document`` to plain ``pypdf`` text extraction on the same PDF?

    python -m bench.documents [--pages N] [--rounds R] [--pause S]

Writes a PDF of 200 pages (five lines of about 80 characters each, Helvetica) and times, round
after round so that machine noise hits all alike: the ``read_document`` family method in-process
(in an ``ActivityEnvironment``, as a worker runs it: the open through the roots, a parser process
of its own, heartbeats), with limits raised so that every page is extracted (``max_sections``
200, ``max_output_chars`` 100,000), once with a parser started ahead and waiting (the default
``warm_parsers = 1``; the timed calls come ``--pause`` seconds after the one before, and once its
replacement has imported the libraries, so that nothing else of the benchmark runs meanwhile)
and once with none (``warm_parsers = 0``: the process starts with the call); plain
``PdfReader(...).pages[i].extract_text()`` over the same bytes in this process; and
``read_document`` on a 12-byte text file with a parser waiting, the fixed cost of a call (handing
over the descriptor, confinement, JSON, the kill and reaping). Prints medians of wall time, pages
per second and CPU time (this process's, and the parser's for the call: not what a parser waiting
had used to start), and the ratio against the goal (``read_document`` within 1.3x of ``pypdf``,
in wall time); all extractions must agree page for page.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from pypdf import PdfReader

from tests.support.documents import activity_env, text_pdf
from toolcalls.activities.base import CallContext
from toolcalls.activities.documents.models import ReadDocumentArgs, ReadDocumentResult
from toolcalls.activities.documents.settings import DocumentSettings
from toolcalls.activities.documents.tools import DocumentTools
from toolcalls.activities.files.paths import Roots

T = TypeVar("T")
CALL = CallContext("bench", "bench", "bench:bench", None, None)
LINE = "The quick brown fox jumps over the lazy dog while the committee reviews page {:03d}."
GOAL = 1.3
"""``read_document`` with a parser waiting, at most this many times plain ``pypdf``."""
SETTLED = 0.5
"""A started parser whose CPU time has not grown for this long is waiting for its job."""


async def read(tools: DocumentTools, path: Path) -> ReadDocumentResult:
    # A fresh context per call: it started now, with the catalog's timeouts.
    env = activity_env(heartbeat=10, start_to_close=60)
    result: ReadDocumentResult = await env.run(
        tools.read_document, ReadDocumentArgs(path=str(path)), CALL
    )
    return result


def plain(data: bytes) -> list[str]:
    reader = PdfReader(io.BytesIO(data))
    return [page.extract_text() for page in reader.pages]


def main(pages: int, rounds: int, pause: float) -> None:
    directory = Path(os.path.realpath(tempfile.mkdtemp(prefix="bench-documents-")))
    data = text_pdf([[LINE.format(p)] * 5 for p in range(1, pages + 1)])
    (directory / "book.pdf").write_bytes(data)
    (directory / "tiny.txt").write_text("hello world\n")
    try:
        asyncio.run(measure(directory, data, pages, rounds, pause))
    finally:
        for name in ("book.pdf", "tiny.txt"):
            (directory / name).unlink()
        directory.rmdir()


async def settle(tools: DocumentTools, pause: float) -> float:
    """Wait ``pause`` seconds, then until the parser started ahead has finished its imports (its
    CPU time stops growing), so that it is ready and nothing else of the benchmark runs; the CPU
    seconds its start took."""
    await asyncio.sleep(pause)
    ticks = 0
    for pid in await tools.parsers.waiting():
        last = None
        while (ticks := cpu_ticks(pid)) != last:
            last = ticks
            await asyncio.sleep(SETTLED)
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    """User and system CPU time of a process, in clock ticks (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu() -> float:
    """CPU seconds of this process and of its children reaped so far."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


async def timed(call: Awaitable[T], before: float = 0.0) -> tuple[T, float, float]:
    """``call``'s result, wall seconds and CPU seconds (this process's and its parser's, less
    ``before``, what the parser used before the call)."""
    started, cpu_started = time.perf_counter(), cpu()
    result = await call
    return result, time.perf_counter() - started, cpu() - cpu_started - before


async def measure(directory: Path, data: bytes, pages: int, rounds: int, pause: float) -> None:
    settings = DocumentSettings(roots=[directory], max_sections=1000, max_output_chars=100_000)
    roots = Roots([directory])
    warm = DocumentTools(settings, roots)
    cold = DocumentTools(settings.model_copy(update={"warm_parsers": 0}), roots)
    runs: dict[str, list[tuple[float, float]]] = {"warm": [], "cold": [], "plain": [], "tiny": []}
    book, tiny = directory / "book.pdf", directory / "tiny.txt"
    try:
        for round_ in range(rounds + 1):
            # After each pause the parser started to replace the last one used is ready, and
            # nothing else of the benchmark runs while the next measurement does.
            ready = await settle(warm, pause)
            plain_start, plain_cpu = time.perf_counter(), time.process_time()
            texts = plain(data)
            plain_run = (time.perf_counter() - plain_start, time.process_time() - plain_cpu)
            result, *warm_run = await timed(read(warm, book), ready)
            ready = await settle(warm, pause)
            cold_result, *cold_run = await timed(read(cold, book))
            _, *tiny_run = await timed(read(warm, tiny), ready)
            if round_ == 0:  # warms the page cache and the imports, and starts the pool
                assert [s.text for s in result.sections] == texts, "extractions differ"
                assert cold_result == result, "extractions differ"
                assert not result.truncated
                continue
            for key, run in zip(runs, (warm_run, cold_run, plain_run, tiny_run), strict=True):
                runs[key].append((run[0], run[1]))
    finally:
        await warm.aclose()
        await cold.aclose()
        roots.close()
    (tool, tool_cpu), (started, started_cpu), (base, base_cpu), (fixed, fixed_cpu) = (
        (statistics.median(r[0] for r in run), statistics.median(r[1] for r in run))
        for run in runs.values()
    )
    ratio = tool / base
    print(f"{pages}-page PDF ({len(data):,} bytes), median of {rounds} rounds")
    print(f"{'':38} {'seconds':>9} {'pages/s':>9} {'CPU s':>9}")
    print(f"{'read_document, parser waiting':38} {tool:9.3f} {pages / tool:9.1f} {tool_cpu:9.3f}")
    print(
        f"{'read_document, parser started for it':38} {started:9.3f} {pages / started:9.1f} "
        f"{started_cpu:9.3f}"
    )
    print(f"{'pypdf extract_text':38} {base:9.3f} {pages / base:9.1f} {base_cpu:9.3f}")
    print(f"{'fixed cost, parser waiting (tiny .txt)':38} {fixed:9.3f} {'':9} {fixed_cpu:9.3f}")
    verdict = "met" if ratio <= GOAL else "not met"
    print(f"read_document / pypdf: {ratio:.2f}x, goal {GOAL}x: {verdict}")
    print(f"CPU: {tool_cpu / base_cpu:.2f}x; without a parser waiting: {started / base:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pause", type=float, default=1.0)
    options = parser.parse_args()
    main(options.pages, options.rounds, options.pause)
