"""``list_files``: entry types, globs, recursion, and every limit reported as truncated."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.support.filetrees import (
    listing,
    make_files,
    read_tools,
    real_root,
    refusal,
    unprivileged,
)
from toolcalls.activities.files.read_models import ListFilesArgs, ListFilesResult
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.activities.files.searching import MAX_RESULT_BYTES
from toolcalls.activities.files.tree import MAX_DEPTH, MAX_ENTRIES


def names(result: ListFilesResult) -> set[str]:
    return {item.path.rsplit("/", 1)[1] for item in result.items}


async def test_types_sizes_and_links_not_followed(tools: FileReadTools, root: Path) -> None:
    (root / "file.txt").write_text("12345")
    (root / "dir").mkdir()
    (root / "dir" / "nested.txt").write_text("x")
    (root / "to_dir").symlink_to("dir")
    (root / "to_outside").symlink_to("/etc")
    os.mkfifo(root / "fifo")
    result = await listing(tools, str(root))
    items = {item.path: (item.type, item.size) for item in result.items}
    assert items == {
        f"{root}/file.txt": ("file", 5),
        f"{root}/dir": ("dir", None),
        f"{root}/to_dir": ("other", None),
        f"{root}/to_outside": ("other", None),
        f"{root}/fifo": ("other", None),
    }
    assert (result.scanned, result.skipped, result.truncated) == (5, 0, False)
    recursive = await listing(tools, str(root), recursive=True)
    assert names(recursive) == {"file.txt", "dir", "nested.txt", "to_dir", "to_outside", "fifo"}
    assert not any("/etc/" in item.path for item in recursive.items)


async def test_glob_matches_names_not_paths(tools: FileReadTools, root: Path) -> None:
    for name in ("a.py", "b.py", "c.txt", ".hidden.py", "A.PY"):
        (root / name).write_text("x")
    (root / "pkg").mkdir()
    (root / "pkg" / "d.py").write_text("x")
    (root / "pkg.py").mkdir()
    assert names(await listing(tools, str(root), pattern="*.py")) == {
        "a.py",
        "b.py",
        ".hidden.py",
        "pkg.py",
    }
    deep = await listing(tools, str(root), pattern="*.py", recursive=True)
    assert names(deep) == {"a.py", "b.py", ".hidden.py", "pkg.py", "d.py"}
    assert deep.scanned == 8
    assert names(await listing(tools, str(root), pattern="[ab].py")) == {"a.py", "b.py"}
    assert names(await listing(tools, str(root), pattern="?.PY")) == {"A.PY"}
    for bad in ("pkg/*.py", "", "a\x00"):
        with pytest.raises(ValidationError, match="pattern"):
            ListFilesArgs(path=str(root), pattern=bad)


async def test_max_results_bounds_and_truncation(tools: FileReadTools, root: Path) -> None:
    make_files(root, 5)
    exact = await listing(tools, str(root), max_results=5)
    assert (len(exact.items), exact.truncated) == (5, False)
    cut = await listing(tools, str(root), max_results=3)
    assert (len(cut.items), cut.truncated) == (3, True)
    assert ListFilesArgs(path="/x").max_results == 100
    for bad in (0, 1_001):
        with pytest.raises(ValidationError, match="max_results"):
            ListFilesArgs(path="/x", max_results=bad)
    assert ListFilesArgs(path="/x", max_results=1_000).max_results == 1_000


def chain(top: Path, levels: int) -> None:
    """``top/d/d/.../d`` ``levels`` directories deep, with a file ``f`` at every level."""
    current = top
    (current / "f").write_text("x")
    for _ in range(levels):
        current = current / "d"
        current.mkdir()
        (current / "f").write_text("x")


async def test_recursion_reads_20_levels_and_says_when_it_stopped(tmp_path: Path) -> None:
    for levels, truncated in ((25, True), (MAX_DEPTH - 1, False)):
        top = real_root(tmp_path) / str(levels)
        top.mkdir()
        chain(top, levels)
        with read_tools(top) as tools:
            result = await listing(tools, str(top), recursive=True, max_results=1_000)
        files = [item.path for item in result.items if item.type == "file"]
        deepest = max(path.removeprefix(str(top)).count("/d") for path in files)
        # The top directory is the first level: files down to 19 nested directories.
        assert deepest == min(levels, MAX_DEPTH - 1)
        assert result.truncated is truncated, levels
    assert MAX_DEPTH == 20


async def test_an_empty_directory_at_the_depth_limit_is_no_truncation(root: Path) -> None:
    current = root
    for _ in range(MAX_DEPTH):
        current = current / "d"
        current.mkdir()
    with read_tools(root) as tools:
        result = await listing(tools, str(root), recursive=True)
    assert len(result.items) == MAX_DEPTH
    assert result.truncated is False
    (current / "below").write_text("x")
    with read_tools(root) as tools:
        result = await listing(tools, str(root), recursive=True)
    assert len(result.items) == MAX_DEPTH
    assert result.truncated is True


async def test_traversal_visits_at_most_10000_entries(tools: FileReadTools, root: Path) -> None:
    make_files(root, MAX_ENTRIES)
    full = await listing(tools, str(root), pattern="nothing*")
    assert (full.scanned, full.items, full.truncated) == (MAX_ENTRIES, [], False)
    (root / "one-more").write_text("x")
    cut = await listing(tools, str(root), pattern="nothing*")
    assert (cut.scanned, cut.truncated) == (MAX_ENTRIES, True)
    assert MAX_ENTRIES == 10_000


async def test_long_paths_are_bounded_by_result_size(tools: FileReadTools, root: Path) -> None:
    deep = root
    for index in range(14):
        deep = deep / (f"{index:02d}" + "x" * 240)
    deep.mkdir(parents=True)
    make_files(deep, 1_000, prefix="f" * 200)
    result = await listing(tools, str(root), recursive=True, max_results=1_000)
    size = len(json.dumps([item.model_dump() for item in result.items]).encode())
    assert size <= MAX_RESULT_BYTES
    assert result.truncated is True
    assert 100 < len(result.items) < 1_000


def test_undecodable_names_and_unreadable_directories_are_skipped(root: Path) -> None:
    root.chmod(0o755)
    (root / "ok.txt").write_text("x")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open(b"bad\xff.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    (root / "locked").mkdir(mode=0)
    with read_tools(root) as tools:
        result = unprivileged(lambda: listing(tools, str(root), recursive=True))
    assert names(result) == {"ok.txt", "locked"}
    assert result.skipped_reasons == {"undecodable_name": 1, "unreadable": 1}
    assert (result.skipped, result.scanned) == (2, 3)
    json.dumps(result.model_dump())


async def test_listing_a_file_or_a_missing_directory_is_refused(
    tools: FileReadTools, root: Path
) -> None:
    (root / "f").write_text("x")
    error = await refusal(listing(tools, f"{root}/f"))
    assert error.message == f"list_files: {root}/f: a component is not a directory"
    error = await refusal(listing(tools, f"{root}/missing"))
    assert error.message == f"list_files: {root}/missing: does not exist"
    listed = await listing(tools, f"{root}/")
    assert [item.path for item in listed.items] == [f"{root}/f"]
