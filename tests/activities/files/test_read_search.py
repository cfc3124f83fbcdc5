"""``search_files``: literal matching, line excerpts, skips, the 32 MiB budget, heartbeats."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from tests.support.filetrees import (
    activity_env,
    make_files,
    read_tools,
    real_root,
    refusal,
    search,
    unprivileged,
)
from toolcalls.activities.files.matching import MAX_LINE_CHARS, Matcher
from toolcalls.activities.files.read_models import SearchFilesArgs, SearchFilesResult
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.activities.files.searching import MAX_SEARCH_BYTES
from toolcalls.workflows.models.call import ErrorCode

MiB = 1024 * 1024


@pytest.fixture
def tools(root: Path) -> Iterator[FileReadTools]:
    with read_tools(root, max_file_bytes=8 * MiB) as tools:
        yield tools


def hits(result: SearchFilesResult) -> list[tuple[str, int, str]]:
    return sorted((item.path.rsplit("/", 1)[1], item.line, item.text) for item in result.items)


async def test_literal_lines_with_one_based_numbers(tools: FileReadTools, root: Path) -> None:
    (root / "a.py").write_text("import os\n\nos.path.join(a, b)  # (a+b)*\r\nprint(os)\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("no match\nthe os.path.join again")
    result = await search(tools, str(root), "os.path.join(")
    assert hits(result) == [("a.py", 3, "os.path.join(a, b)  # (a+b)*")]
    assert hits(await search(tools, str(root), "(a+b)*")) == [
        ("a.py", 3, "os.path.join(a, b)  # (a+b)*")
    ]
    assert hits(await search(tools, str(root), "os.path.join")) == [
        ("a.py", 3, "os.path.join(a, b)  # (a+b)*"),
        ("b.txt", 2, "the os.path.join again"),
    ]
    assert (result.scanned, result.skipped, result.truncated) == (3, 0, False)


async def test_one_match_per_line_and_a_file_on_its_own(tools: FileReadTools, root: Path) -> None:
    (root / "f.txt").write_text("ab ab ab\nxx\nab\n")
    result = await search(tools, f"{root}/f.txt", "ab")
    assert [(item.line, item.text) for item in result.items] == [(1, "ab ab ab"), (3, "ab")]
    assert result.scanned == 1
    none = await search(tools, f"{root}/f.txt", "zz", pattern="*.md")
    assert (none.items, none.truncated, none.skipped) == ([], False, 0)


async def test_case_sensitivity_ascii_and_unicode(tools: FileReadTools, root: Path) -> None:
    (root / "ascii.txt").write_text("Hello World\nHELLO again\nhello\n")
    (root / "uni.txt").write_text("Grüße aus der STRASSE\nCAFÉ au lait\ncafé noir\n")
    folded = await search(tools, str(root), "hello")
    assert [(i.line, i.text) for i in folded.items] == [
        (1, "Hello World"),
        (2, "HELLO again"),
        (3, "hello"),
    ]
    exact = await search(tools, str(root), "hello", case_sensitive=True)
    assert [i.line for i in exact.items] == [3]
    assert hits(await search(tools, str(root), "café")) == [
        ("uni.txt", 2, "CAFÉ au lait"),
        ("uni.txt", 3, "café noir"),
    ]
    assert hits(await search(tools, str(root), "café", case_sensitive=True)) == [
        ("uni.txt", 3, "café noir")
    ]
    # Unicode case folding: ß folds to ss, both ways.
    assert hits(await search(tools, str(root), "straße")) == [
        ("uni.txt", 1, "Grüße aus der STRASSE")
    ]
    assert hits(await search(tools, str(root), "GRÜSSE")) == [
        ("uni.txt", 1, "Grüße aus der STRASSE")
    ]


async def test_long_lines_are_cut_to_500_characters(tools: FileReadTools, root: Path) -> None:
    early = "needle" + "é" * 700
    late = "x" * 900 + "needle" + "y" * 900
    (root / "long.txt").write_text(f"{early}\n{'z' * 500}needle\n{late}\n")
    result = await search(tools, str(root), "NEEDLE")
    first, exact, last = result.items
    assert (first.line, first.text, first.text_truncated) == (1, early[:500], True)
    # A line of exactly 500 characters plus the match is cut around the match.
    assert exact.text_truncated is True
    assert "needle" in exact.text
    assert len(exact.text) == MAX_LINE_CHARS
    assert last.text_truncated is True
    assert "needle" in last.text
    assert len(last.text) == MAX_LINE_CHARS == 500
    (root / "short.txt").write_text("n" * 494 + "needle\n")
    short = await search(tools, f"{root}/short.txt", "needle")
    assert (len(short.items[0].text), short.items[0].text_truncated) == (500, False)


async def test_binary_and_oversized_files_are_skipped_and_counted(root: Path) -> None:
    (root / "text.txt").write_text("needle\n")
    (root / "nul.bin").write_bytes(b"needle\x00\n")
    (root / "big.txt").write_bytes(b"needle\n" + b"x" * 2_000)
    (root / "latin1.txt").write_bytes("needle caf\xe9\n".encode("latin-1"))
    with read_tools(root, max_file_bytes=1_000) as tools:
        result = await search(tools, str(root), "needle")
    # Invalid UTF-8 is searched (bytes match) and shown with replacement characters.
    assert hits(result) == [("latin1.txt", 1, "needle caf\ufffd"), ("text.txt", 1, "needle")]
    assert result.skipped_reasons == {"binary": 1, "oversized": 1}
    assert result.skipped == 2


def test_unreadable_files_and_directories_are_skipped_and_counted(root: Path) -> None:
    root.chmod(0o755)
    (root / "open.txt").write_text("needle\n")
    (root / "secret.txt").write_text("needle\n")
    (root / "secret.txt").chmod(0)
    (root / "locked").mkdir()
    (root / "locked" / "inner.txt").write_text("needle\n")
    (root / "locked").chmod(0)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open(b"bad\xff.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    with read_tools(root) as tools:
        result = unprivileged(lambda: search(tools, str(root), "needle"))
    assert hits(result) == [("open.txt", 1, "needle")]
    assert result.skipped_reasons == {"unreadable": 2, "undecodable_name": 1}
    assert result.skipped == 3


async def test_max_results_bounds_and_truncation(tools: FileReadTools, root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 7)
    exact = await search(tools, str(root), "hit", max_results=7)
    assert (len(exact.items), exact.truncated) == (7, False)
    cut = await search(tools, str(root), "hit", max_results=3)
    assert ([i.line for i in cut.items], cut.truncated) == ([1, 2, 3], True)
    for bad in (0, 1_001):
        with pytest.raises(ValidationError, match="max_results"):
            SearchFilesArgs(path="/x", query="q", max_results=bad)
    for query in ("", "two\nlines", "nul\x00", "q" * 1_001):
        with pytest.raises(ValidationError, match="query"):
            SearchFilesArgs(path="/x", query=query)


async def test_search_reads_at_most_32_mib(tools: FileReadTools, root: Path) -> None:
    chunk = b"needle\n" + b"x" * (7 * MiB)
    for index in range(5):
        (root / f"part{index}.txt").write_bytes(chunk)
    result = await search(tools, str(root), "needle")
    # Four files fit in 32 MiB; the fifth would not, so the search stops and says so.
    assert len(result.items) == 4
    assert 4 * len(chunk) <= MAX_SEARCH_BYTES < 5 * len(chunk)
    assert result.truncated is True
    assert result.skipped == 0
    assert 32 * MiB == MAX_SEARCH_BYTES


async def test_pattern_and_special_entries(tools: FileReadTools, root: Path) -> None:
    (root / "a.py").write_text("needle\n")
    (root / "b.txt").write_text("needle\n")
    (root / "link.py").symlink_to("a.py")
    os.mkfifo(root / "pipe.py")
    result = await search(tools, str(root), "needle", pattern="*.py")
    assert hits(result) == [("a.py", 1, "needle")]
    assert (result.scanned, result.skipped) == (4, 0)


async def test_missing_path_is_refused(tools: FileReadTools, root: Path) -> None:
    error = await refusal(search(tools, f"{root}/missing", "x"))
    assert error.message == f"search_files: {root}/missing: does not exist"


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10,000 files of 1.6 KB, none holding the query: a search that has to read them all."""
    root = real_root(tmp_path_factory.mktemp("big"))
    make_files(root, 10_000, content=b"some text that is not what we look for\n" * 40)
    return root


async def test_heartbeats_report_progress_during_a_long_search(big_tree: Path) -> None:
    root = big_tree
    beats: list[dict[str, int]] = []
    env = activity_env(heartbeat=0.03)
    env.on_heartbeat = lambda *details: beats.append(details[0])
    with read_tools(root) as tools:
        result = await search(tools, str(root), "absent", env=env)
    assert result.scanned == 10_000
    assert result.truncated is False
    progress = [beat for beat in beats if 0 < beat["scanned"] < 10_000]
    assert progress, beats
    assert progress == sorted(progress, key=lambda beat: beat["scanned"])
    assert all(beat["bytes_read"] > 0 for beat in progress)
    assert set(beats[0]) == {"scanned", "files_searched", "bytes_read", "matches"}


async def test_cancellation_stops_the_walk_and_returns_what_it_found(big_tree: Path) -> None:
    root = big_tree
    env = activity_env(heartbeat=0.03)

    def on_heartbeat(*details: Any) -> None:
        if details[0]["scanned"] > 0:
            env.cancel()

    env.on_heartbeat = on_heartbeat
    with read_tools(root) as tools, pytest.raises(ApplicationError) as caught:
        await asyncio.wait_for(search(tools, str(root), "needle", env=env), 30)
    assert caught.value.type == ErrorCode.CANCELED.value
    partial = caught.value.details[0]["output"]
    assert 0 < partial["scanned"] < 10_000
    assert partial["truncated"] is True
    assert partial["items"] == []


ALPHABET = "abAB ßSsÉé\r\n"


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=ALPHABET, max_size=60),
    query=st.text(alphabet=ALPHABET.replace("\n", ""), min_size=1, max_size=3),
    case_sensitive=st.booleans(),
)
def test_matcher_finds_exactly_the_lines_a_naive_scan_finds(
    text: str, query: str, case_sensitive: bool
) -> None:
    def contains(line: str) -> bool:
        return query in line if case_sensitive else query.casefold() in line.casefold()

    lines = text.split("\n")
    expected = [(number, line.removesuffix("\r")) for number, line in enumerate(lines, 1)]
    expected = [(n, line) for n, line in expected if contains(lines[n - 1])]
    found = Matcher(query, case_sensitive=case_sensitive).lines(text.encode(), 1_000)
    assert [(m.line, m.text) for m in found] == expected
    assert not any(m.text_truncated for m in found)
