"""The Office archive check (``extraction.check_archive``) does what its docstring says: it stops
inflating an entry one byte past its declared size, whatever the entry's stream holds, and the
library then parses the very bytes it checked. Proven by memory, in-process and in the real
parser process, not by a process being killed."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from tests.support.documents import (
    deflate_zeros,
    document_tools,
    docx_file,
    lying_entry,
    read,
    rewrite_zip,
    xlsx_file,
)
from tests.support.filetrees import real_root
from toolcalls.activities.documents import extraction
from toolcalls.activities.documents.settings import MAX_ARCHIVE_BYTES, DocumentSettings
from toolcalls.activities.documents.tools import DocumentTools
from toolcalls.activities.files.paths import Roots

MIB = 1 << 20
CHECK_MEMORY = 2 * MIB
"""What the check may allocate while it reads a bomb: a few 64 KiB chunks, not the bomb."""
MEASURED = """
import json, os, socket, subprocess, sys
command, options = json.loads(sys.argv[1])
ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
child = subprocess.Popen([*command, "--parent", str(os.getpid())], stdin=theirs)
socket.send_fds(ours, [json.dumps(options).encode()], [0])
_, status, usage = os.wait4(child.pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status), file=sys.stderr)
"""
"""Starts the parser (as its parent), hands it the job and the document on its own stdin as the
worker does, and reports the parser's peak resident size and exit code on stderr. A small
launcher, because a child's peak counts what it shared with its parent before ``exec``: started
from the test process itself, it would start at pytest's size."""


def checked(data: bytes) -> tuple[extraction.Refused | None, int]:
    """What ``check_archive`` says of ``data``, and the most memory it allocated meanwhile."""
    stream = io.BytesIO(data)
    tracemalloc.start()
    try:
        extraction.check_archive(stream, "docx", MAX_ARCHIVE_BYTES)
        refusal = None
    except extraction.Refused as exc:
        refusal = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return refusal, peak


@pytest.mark.parametrize(
    "declared",
    [1_600, 20 * MIB],
    ids=["declares-1.6-kb", "declares-20-mib-under-the-cap"],
)
def test_an_entry_inflating_past_its_declared_size_stops_there(declared: int) -> None:
    # 1 GiB of zeros in 1 MB of deflate stream; the CRC is that of the declared prefix, so a
    # reader that stops at the declared size finds nothing wrong.
    bomb = lying_entry(docx_file(["hello"]), "word/document.xml", deflate_zeros(1 << 30), declared)
    assert zipfile.ZipFile(io.BytesIO(bomb)).getinfo("word/document.xml").file_size == declared
    refusal, peak = checked(bomb)
    assert refusal is not None
    assert refusal.code == "refused"
    assert refusal.message == (
        f"archive entry word/document.xml inflates past its declared {declared} bytes (a zip bomb)"
    )
    assert peak < CHECK_MEMORY


def test_a_declared_size_over_the_cap_is_refused_before_anything_inflates() -> None:
    honest = rewrite_zip(docx_file(["hello"]), {"word/media/zeros.bin": bytes(40 * MIB)})
    refusal, peak = checked(honest)
    assert refusal is not None
    assert refusal.message.startswith("archive expands to ")
    assert peak < CHECK_MEMORY


def test_honest_archives_pass_the_check_whole() -> None:
    for data in (
        docx_file(["hello", [["a", "b"], ["c", "d"]]] * 50),
        xlsx_file({"S": [[i, f"v{i}"] for i in range(500)]}),
        rewrite_zip(docx_file(["x"]), {"word/media/zeros.bin": bytes(20 * MIB)}),
    ):
        refusal, peak = checked(data)
        assert refusal is None
        assert peak < CHECK_MEMORY


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_entries_zipfile_inflates_without_a_bound_are_refused(method: int) -> None:
    """``zipfile`` hands a bzip2 or LZMA entry's whole read to the decompressor with no output
    limit; Office never writes them."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("word/document.xml", bytes(1_000), compress_type=method)
    refusal, _ = checked(out.getvalue())
    assert refusal is not None
    assert refusal.message == (
        f"archive entry word/document.xml uses compression method {method}; "
        "only stored and deflated entries are read"
    )


def test_the_parser_process_refuses_a_2_gib_bomb_in_little_memory(tmp_path: Path) -> None:
    """The real parser, as the worker runs it, with its default 512 MiB ceiling: the check
    refuses the entry having inflated 1.6 KB of it, so the process never grows (the library
    would inflate the 2 GiB in one call and stop only at the ceiling)."""
    path = tmp_path / "bomb.docx"
    path.write_bytes(
        lying_entry(docx_file(["hello"]), "word/document.xml", deflate_zeros(2 << 30), 1_600)
    )
    settings = DocumentSettings(roots=[real_root(tmp_path)])
    tools = DocumentTools(settings, Roots(settings.roots))
    job = json.dumps([tools.parser, tools._options("docx", 30)])
    tools.roots.close()
    with path.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-I", "-c", MEASURED, job],
            stdin=stdin,
            capture_output=True,
            cwd="/",
            check=True,
            timeout=120,
        )
    maxrss, returncode = map(int, done.stderr.split())
    # ru_maxrss is in KiB: the interpreter and the check, a fraction of the 512 MiB ceiling.
    assert maxrss * 1024 < 128 * MIB
    assert returncode == 0
    assert done.stdout.decode() == (
        '{"error": "refused", "message": "archive entry word/document.xml inflates past its '
        'declared 1600 bytes (a zip bomb)"}'
    )


async def test_the_tool_reports_the_bomb_as_refused(tmp_path: Path) -> None:
    root = real_root(tmp_path)
    bomb = lying_entry(docx_file(["hello"]), "word/document.xml", deflate_zeros(64 * MIB), 1_600)
    (root / "bomb.docx").write_bytes(bomb)
    async with document_tools(root) as tools:
        with pytest.raises(ApplicationError) as caught:
            await read(tools, root / "bomb.docx")
    assert caught.value.type == "invalid_arguments"
    assert caught.value.message.endswith(
        "archive entry word/document.xml inflates past its declared 1600 bytes (a zip bomb)"
    )


def test_the_library_parses_the_bytes_the_check_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file rewritten in place between the check and the parse: the library still reads what
    was checked (one copy in memory), not the new bytes."""
    path = tmp_path / "a.docx"
    path.write_bytes(docx_file(["checked text"]))
    check = extraction.check_archive

    def then_rewritten(stream: io.BytesIO, fmt: str, max_bytes: int) -> None:
        check(stream, fmt, max_bytes)
        path.write_bytes(docx_file(["unchecked text"]))  # same inode, new content

    monkeypatch.setattr(extraction, "check_archive", then_rewritten)
    with path.open("rb") as stream:
        result = extraction.extract(
            stream, "docx", max_chars=1_000, max_sections=10, max_archive_bytes=MAX_ARCHIVE_BYTES
        )
    assert [section["text"] for section in result["sections"]] == ["checked text"]
