"""How close is ``search_files`` to ``grep -rF`` on the same tree?

    make bench-search
    python -m bench.search_files [--files N] [--rounds R]

Builds 10,000 text files (about 2 KB each, 20 MB in all, a hundred of them binary) in one
temporary directory: one directory, because a traversal visits at most 10,000 entries and
subdirectories count, so a deeper tree of 10,000 files would be cut short. Then times, round
after round so that machine noise hits both alike, the ``search_files`` family method called
in-process (in an ``ActivityEnvironment``, as a worker runs it, with the tool's own thread and
heartbeats) and ``grep -rnF`` / ``grep -rnFi`` as a subprocess, for a rare word (0.5% of the
files) and a three-word phrase, case-sensitive and not. Prints the medians, the ratio, and both
match counts, which must agree. The first round warms the page cache and is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext
from toolcalls.activities.files.paths import Roots
from toolcalls.activities.files.read_models import MAX_RESULTS, SearchFilesArgs
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.activities.files.settings import FilesSettings

WORDS = [
    *("alpha", "beta", "gamma", "delta", "return", "value", "import", "class", "def", "self"),
    *("result", "error", "data", "index", "count", "buffer", "stream", "config", "worker"),
    *("activity", "workflow", "signal", "update", "query", "timer", "history", "event"),
]
RARE = "needle_in_haystack"
CALL = CallContext("bench", "bench", "bench:bench", None, None)


def build_tree(root: Path, files: int, seed: int = 7) -> None:
    """``files`` files; 1 in 200 holds ``RARE`` (half of them in capitals), 1 in 100 is binary."""
    rng = random.Random(seed)
    for index in range(files):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(40)]
        if index % 200 == 7:
            lines[rng.randrange(len(lines))] += f" {RARE.upper() if index % 400 == 7 else RARE}"
        data = ("\n".join(lines) + "\n").encode()
        if index % 100 == 50:
            data = data[:100] + b"\x00" + data[100:]
        (root / f"f{index:05d}.txt").write_bytes(data)


def grep(root: Path, query: str, case_sensitive: bool) -> tuple[float, int]:
    argv = ["grep", "-rnF", *([] if case_sensitive else ["-i"]), "--", query, str(root)]
    start = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, env={**os.environ, "LC_ALL": "C.UTF-8"}, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode > 1:
        raise RuntimeError(done.stderr.decode(errors="replace"))
    # grep reports a match in a binary file as one line; search_files skips binary files.
    lines = [line for line in done.stdout.splitlines() if not line.startswith(b"Binary file")]
    return elapsed, len(lines)


def tool(tools: FileReadTools, root: Path, query: str, case_sensitive: bool) -> tuple[float, int]:
    args = SearchFilesArgs(
        path=str(root), query=query, case_sensitive=case_sensitive, max_results=MAX_RESULTS
    )
    start = time.perf_counter()
    result = asyncio.run(ActivityEnvironment().run(tools.search_files, args, CALL))
    elapsed = time.perf_counter() - start
    if result.truncated:
        raise RuntimeError(f"search for {query!r} was truncated; the comparison needs all of it")
    return elapsed, len(result.items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    if shutil.which("grep") is None:
        sys.exit("grep is not installed")
    cases = [
        (RARE, True),
        (RARE, False),
        ("event timer history", True),
        ("Event Timer History", False),
    ]
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        root = Path(os.path.realpath(tmp))
        build_tree(root, options.files)
        roots = Roots([root])
        tools = FileReadTools(FilesSettings(roots=[root]), roots)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        print(f"tree: {options.files} files, {size / 1e6:.1f} MB, {options.rounds} rounds")
        print(
            f"{'query':<22} {'case':<5} {'search_files':>13} {'grep -rF':>10} {'ratio':>6}  matches"
        )
        for query, case_sensitive in cases:
            ours: list[float] = []
            theirs: list[float] = []
            counts: tuple[int, int] = (0, 0)
            for round_ in range(options.rounds + 1):
                ours_s, ours_n = tool(tools, root, query, case_sensitive)
                grep_s, grep_n = grep(root, query, case_sensitive)
                counts = (ours_n, grep_n)
                if round_:
                    ours.append(ours_s)
                    theirs.append(grep_s)
            ours_ms = statistics.median(ours) * 1000
            grep_ms = statistics.median(theirs) * 1000
            agree = "" if counts[0] == counts[1] else "  MISMATCH"
            print(
                f"{query!r:<22} {'yes' if case_sensitive else 'no':<5} {ours_ms:>10.1f} ms "
                f"{grep_ms:>7.1f} ms {ours_ms / grep_ms:>5.1f}x  {counts[0]} / {counts[1]}{agree}"
            )
        roots.close()


if __name__ == "__main__":
    main()
