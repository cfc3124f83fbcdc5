"""``read_file``: offsets in characters, limits, and what it refuses to decode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from tests.support.filetrees import read, read_tools, real_root, refusal, unprivileged
from toolcalls.activities.files.read_models import MAX_READ_CHARS, ReadFileArgs
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.workflows.models.call import ErrorCode

TEXT = "héllo wörld 😀 ünïcödé\nzweite Zeile ß\n"


@pytest.fixture
def tools(root: Path) -> Iterator[FileReadTools]:
    with read_tools(root, max_file_bytes=1_000) as tools:
        yield tools


async def test_offsets_count_characters_not_bytes(tools: FileReadTools, root: Path) -> None:
    (root / "t.txt").write_text(TEXT, encoding="utf-8")
    assert len(TEXT.encode()) > len(TEXT)
    result = await read(tools, f"{root}/t.txt", offset=12, max_chars=3)
    assert result.content == "😀 ü"
    assert result.next_offset == 15
    assert result.path == f"{root}/t.txt"


async def test_next_offset_continues_until_the_end(tools: FileReadTools, root: Path) -> None:
    (root / "t.txt").write_text(TEXT, encoding="utf-8")
    parts = []
    offset: int | None = 0
    while offset is not None:
        result = await read(tools, f"{root}/t.txt", offset=offset, max_chars=7)
        assert len(result.content) <= 7
        parts.append(result.content)
        offset = result.next_offset
    assert "".join(parts) == TEXT
    assert len(parts) == -(-len(TEXT) // 7)


async def test_whole_file_and_its_end(tools: FileReadTools, root: Path) -> None:
    (root / "t.txt").write_text(TEXT, encoding="utf-8")
    whole = await read(tools, f"{root}/t.txt")
    assert (whole.content, whole.next_offset) == (TEXT, None)
    at_end = await read(tools, f"{root}/t.txt", offset=len(TEXT))
    assert (at_end.content, at_end.next_offset) == ("", None)
    (root / "empty").write_bytes(b"")
    empty = await read(tools, f"{root}/empty")
    assert (empty.content, empty.next_offset) == ("", None)


async def test_offset_past_the_end_names_the_offset(tools: FileReadTools, root: Path) -> None:
    (root / "t.txt").write_text(TEXT, encoding="utf-8")
    error = await refusal(read(tools, f"{root}/t.txt", offset=len(TEXT) + 1))
    assert error.message == (
        f"read_file: {root}/t.txt: offset {len(TEXT) + 1} is past the end ({len(TEXT)} characters)"
    )
    assert error.details[0]["fixable_args"] == ["offset"]


def test_max_chars_is_1_to_20000_and_null_means_the_default() -> None:
    assert ReadFileArgs(path="/x").max_chars == MAX_READ_CHARS == 20_000
    assert ReadFileArgs.model_validate({"path": "/x", "offset": None, "max_chars": None}) == (
        ReadFileArgs(path="/x", offset=0, max_chars=20_000)
    )
    for bad in (0, 20_001):
        with pytest.raises(ValidationError, match="max_chars"):
            ReadFileArgs(path="/x", max_chars=bad)
    with pytest.raises(ValidationError, match="offset"):
        ReadFileArgs(path="/x", offset=-1)


async def test_default_read_stops_at_20000_characters(tmp_path: Path) -> None:
    root = real_root(tmp_path)
    (root / "big.txt").write_text("ä" * 25_000, encoding="utf-8")
    with read_tools(root) as tools:
        first = await read(tools, f"{root}/big.txt")
        assert (len(first.content), first.next_offset) == (20_000, 20_000)
        rest = await read(tools, f"{root}/big.txt", offset=first.next_offset)
        assert (len(rest.content), rest.next_offset) == (5_000, None)


async def test_files_over_max_file_bytes_are_refused(tools: FileReadTools, root: Path) -> None:
    (root / "limit.txt").write_bytes(b"a" * 1_000)
    (root / "over.txt").write_bytes(b"a" * 1_001)
    assert len((await read(tools, f"{root}/limit.txt")).content) == 1_000
    error = await refusal(read(tools, f"{root}/over.txt"))
    assert error.message == f"read_file: {root}/over.txt: is larger than 1000 bytes"


async def test_binary_and_invalid_utf8_are_refused(tools: FileReadTools, root: Path) -> None:
    (root / "nul.bin").write_bytes(b"text\x00more")
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "cut.txt").write_bytes("😀".encode()[:3])
    error = await refusal(read(tools, f"{root}/nul.bin"))
    assert error.message == f"read_file: {root}/nul.bin: is binary (contains NUL bytes)"
    error = await refusal(read(tools, f"{root}/latin1.txt"))
    assert error.message == f"read_file: {root}/latin1.txt: is not valid UTF-8 (byte 3)"
    error = await refusal(read(tools, f"{root}/cut.txt"))
    assert "is not valid UTF-8 (byte 0)" in error.message


async def test_directories_and_missing_files_are_refused(tools: FileReadTools, root: Path) -> None:
    (root / "d").mkdir()
    error = await refusal(read(tools, f"{root}/d"))
    assert error.message == f"read_file: {root}/d: a directory"
    error = await refusal(read(tools, str(root)))
    assert error.message == f"read_file: {root}: a directory"
    error = await refusal(read(tools, f"{root}/missing.txt"))
    assert error.message == f"read_file: {root}/missing.txt: does not exist"
    assert error.details[0]["fixable_args"] == ["path"]


def test_permission_denied_is_an_execution_failure(root: Path) -> None:
    root.chmod(0o755)
    secret = root / "secret.txt"
    secret.write_text("no\n")
    secret.chmod(0)
    with read_tools(root) as tools, pytest.raises(ApplicationError) as caught:
        # Root reads anything, so the tool's threads drop their filesystem privileges first.
        unprivileged(lambda: read(tools, str(secret)))
    assert caught.value.type == ErrorCode.EXECUTION_FAILED.value
    assert caught.value.message == f"read_file: {secret}: permission denied"
    assert caught.value.details[0]["fixable_args"] == []
