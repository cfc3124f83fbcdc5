"""How close is ``read_document`` to plain ``pypdf`` text extraction on the same PDF?

    python -m bench.documents [--pages N] [--rounds R]

Writes a PDF of 200 pages (five lines of about 80 characters each, Helvetica) and times, round
after round so that machine noise hits both alike: the ``read_document`` family method in-process
(in an ``ActivityEnvironment``, as a worker runs it: the open through the roots, a fresh parser
process per call, heartbeats), with limits raised so that every page is extracted
(``max_sections`` 200, ``max_output_chars`` 100,000); plain ``PdfReader(...).pages[i]
.extract_text()`` over the same bytes in this process; and ``read_document`` on a 12-byte text
file, which is the parser process's fixed cost (start, confinement, JSON, reaping). Prints
medians, pages per second and the ratio; both extractions must agree page for page.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

from pypdf import PdfReader

from activities.base import CallContext
from activities.documents.models import ReadDocumentArgs, ReadDocumentResult
from activities.documents.settings import DocumentSettings
from activities.documents.tools import DocumentTools
from activities.files.paths import Roots
from tests.support.documents import activity_env, text_pdf

CALL = CallContext("bench", "bench", "bench:bench", None, None)
LINE = "The quick brown fox jumps over the lazy dog while the committee reviews page {:03d}."


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


def main(pages: int, rounds: int) -> None:
    directory = Path(os.path.realpath(tempfile.mkdtemp(prefix="bench-documents-")))
    data = text_pdf([[LINE.format(p)] * 5 for p in range(1, pages + 1)])
    (directory / "book.pdf").write_bytes(data)
    (directory / "tiny.txt").write_text("hello world\n")
    try:
        asyncio.run(measure(directory, data, pages, rounds))
    finally:
        for name in ("book.pdf", "tiny.txt"):
            (directory / name).unlink()
        directory.rmdir()


async def measure(directory: Path, data: bytes, pages: int, rounds: int) -> None:
    settings = DocumentSettings(roots=[directory], max_sections=1000, max_output_chars=100_000)
    roots = Roots([directory])
    tools = DocumentTools(settings, roots)
    tool_times, plain_times, start_times = [], [], []
    try:
        for round_ in range(rounds + 1):
            started = time.perf_counter()
            result = await read(tools, directory / "book.pdf")
            tool_time = time.perf_counter() - started
            started = time.perf_counter()
            texts = plain(data)
            plain_time = time.perf_counter() - started
            started = time.perf_counter()
            await read(tools, directory / "tiny.txt")
            start_time = time.perf_counter() - started
            if round_ == 0:  # warms the page cache and the imports
                assert [s.text for s in result.sections] == texts, "extractions differ"
                assert not result.truncated
                continue
            tool_times.append(tool_time)
            plain_times.append(plain_time)
            start_times.append(start_time)
    finally:
        roots.close()
    tool, base, start = (statistics.median(t) for t in (tool_times, plain_times, start_times))
    print(f"{pages}-page PDF ({len(data):,} bytes), median of {rounds} rounds")
    print(f"{'':28} {'seconds':>9} {'pages/s':>9}")
    print(f"{'read_document':28} {tool:9.3f} {pages / tool:9.1f}")
    print(f"{'pypdf extract_text':28} {base:9.3f} {pages / base:9.1f}")
    print(f"{'parser process (tiny .txt)':28} {start:9.3f}")
    print(f"read_document / pypdf: {tool / base:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    main(options.pages, options.rounds)
