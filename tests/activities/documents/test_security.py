"""Hostile documents and paths (SECURITY-CASES.md, "documents"): every case refused cleanly or
bounded, the parser killed when it hangs, runs out of CPU or memory, or floods its output, and no
process left behind."""

from __future__ import annotations

import asyncio
import io
import os
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from pypdf.filters import LZWDecode
from temporalio.exceptions import ApplicationError, CancelledError

from tests.support.children import children
from tests.support.documents import (
    BILLION_LAUGHS,
    CALL,
    EXTERNAL_ENTITY,
    LZW_CYCLE_BYTES,
    activity_env,
    busy_children,
    declare_size,
    document_tools,
    docx_file,
    duplicate_entry,
    encrypted_pdf,
    hostile,
    lzw_bomb,
    lzw_encode,
    many_entries,
    pdf_file,
    pdf_pages,
    read,
    rewrite_zip,
    search,
    text_content,
    text_pdf,
    xlsx_file,
    zlib_twice,
)
from toolcalls.activities.documents import extract, extraction
from toolcalls.activities.documents.models import ReadDocumentArgs, ReadDocumentResult
from toolcalls.activities.documents.settings import MAX_TIMEOUT_SECONDS, DocumentSettings
from toolcalls.activities.documents.tools import MAX_RESULT_BYTES, DocumentTools
from toolcalls.activities.files.paths import Located, Roots


async def refusal(tools: DocumentTools, path: Path, code: str = "invalid_arguments") -> str:
    with pytest.raises(ApplicationError) as caught:
        await read(tools, path)
    assert caught.value.type == code, caught.value.message
    assert caught.value.non_retryable
    return caught.value.message


async def attempt(tools: DocumentTools, path: Path) -> ReadDocumentResult | ApplicationError:
    """The result or the tool's error, for documents where either is a clean outcome."""
    try:
        return await read(tools, path)
    except ApplicationError as exc:
        return exc


async def test_docx_declaring_a_gigabyte_is_refused_before_parsing(
    root: Path, tools: DocumentTools
) -> None:
    (root / "bomb.docx").write_bytes(
        declare_size(docx_file(["hello"]), "word/document.xml", 1_000_000_000)
    )
    message = await refusal(tools, root / "bomb.docx")
    assert "more than max_archive_bytes (33554432)" in message


async def test_a_real_zip_bomb_is_refused_by_its_declared_sizes(
    root: Path, tools: DocumentTools
) -> None:
    bomb = rewrite_zip(docx_file(["hello"]), {"word/media/zeros.bin": bytes(40 * 1024 * 1024)})
    assert len(bomb) < 200_000
    (root / "zeros.docx").write_bytes(bomb)
    assert "expands to" in await refusal(tools, root / "zeros.docx")


async def test_overlapping_entries_are_refused(root: Path, tools: DocumentTools) -> None:
    overlapped = duplicate_entry(xlsx_file({"S": [["a"]]}), "xl/workbook.xml", "xl/workbooK.xml")
    (root / "overlap.xlsx").write_bytes(overlapped)
    assert "overlapping entries" in await refusal(tools, root / "overlap.xlsx")


async def test_too_many_entries_are_refused(root: Path, tools: DocumentTools) -> None:
    (root / "many.xlsx").write_bytes(many_entries(extraction.MAX_ARCHIVE_ENTRIES + 1))
    message = await refusal(tools, root / "many.xlsx")
    assert f"more than {extraction.MAX_ARCHIVE_ENTRIES}" in message


async def test_an_entry_lying_about_its_size_stops_at_the_declared_size(
    root: Path, tools: DocumentTools
) -> None:
    # Small declared, large actual: the check inflates one byte past the declared size and
    # refuses the entry before any library reads it (test_archive.py measures it).
    liar = declare_size(docx_file(["x" * 50_000]), "word/document.xml", 100)
    (root / "liar.docx").write_bytes(liar)
    message = await refusal(tools, root / "liar.docx")
    assert message.endswith(
        "archive entry word/document.xml inflates past its declared 100 bytes (a zip bomb)"
    )


async def test_a_sheet_claiming_the_whole_grid_is_read_as_it_is(
    root: Path, tools: DocumentTools
) -> None:
    book = xlsx_file({"Big": [["a", "b"], ["c"]]})
    import zipfile
    from io import BytesIO

    sheet = zipfile.ZipFile(BytesIO(book)).read("xl/worksheets/sheet1.xml")
    claimed = sheet.replace(b'<dimension ref="A1:B2"/>', b'<dimension ref="A1:XFD1048576"/>')
    assert claimed != sheet
    (root / "grid.xlsx").write_bytes(rewrite_zip(book, {"xl/worksheets/sheet1.xml": claimed}))
    started = time.monotonic()
    result = await read(tools, root / "grid.xlsx")
    # Walking the 17 billion claimed cells would take hours, not the 60 s this allows.
    assert time.monotonic() - started < 60
    assert result.sections[0].rows == [["a", "b"], ["c"]]


async def test_encrypted_pdf_is_refused_without_guessing(root: Path, tools: DocumentTools) -> None:
    (root / "locked.pdf").write_bytes(encrypted_pdf([["secret numbers"]], password=""))
    message = await refusal(tools, root / "locked.pdf")
    assert message.endswith("is an encrypted PDF; encrypted documents are not supported")


async def test_ole2_containers_are_refused_as_encrypted_office_files(
    root: Path, tools: DocumentTools
) -> None:
    ole2 = extraction.OLE2_MAGIC + bytes(4096)
    for name in ("locked.docx", "locked.xlsx"):
        (root / name).write_bytes(ole2)
        assert "OLE2 container: an encrypted Office document" in await refusal(tools, root / name)


async def test_entity_declarations_in_xml_are_refused(root: Path, tools: DocumentTools) -> None:
    (root / "lol.xml").write_bytes(BILLION_LAUGHS)
    (root / "xxe.xml").write_bytes(EXTERNAL_ENTITY)
    assert "declares entities" in await refusal(tools, root / "lol.xml")
    assert "declares entities" in await refusal(tools, root / "xxe.xml")
    # Plain and even malformed XML is text: nothing in it is interpreted.
    (root / "ok.xml").write_text("<a><b>text</b>")
    result = await read(tools, root / "ok.xml")
    assert result.sections[0].text == "<a><b>text</b>"


async def test_pdf_flate_bomb_is_a_clean_error(root: Path, tools: DocumentTools) -> None:
    bomb = pdf_pages(
        [zlib_twice(bytes(80_000_000))], content_entries=b"/Filter [/FlateDecode /FlateDecode]"
    )
    assert len(bomb) < 10_000
    (root / "bomb.pdf").write_bytes(bomb)
    message = await refusal(tools, root / "bomb.pdf", "execution_failed")
    assert "LimitReachedError" in message


async def test_pdf_lzw_bomb_stops_at_the_decompression_limit(
    root: Path, tools: DocumentTools
) -> None:
    # The same stream at a few tables' length decodes to exactly what it claims to.
    assert LZWDecode.decode(lzw_bomb(2 * LZW_CYCLE_BYTES)) == b" " * 2 * LZW_CYCLE_BYTES
    bomb = pdf_pages([lzw_bomb(2**30)], content_entries=b"/Filter /LZWDecode")
    assert len(bomb) < 1_000_000
    (root / "bomb.pdf").write_bytes(bomb)
    # The filter itself is read: the same page type with ordinary text comes back.
    readable = pdf_pages(
        [lzw_encode(text_content(["lzw text"]))], content_entries=b"/Filter /LZWDecode"
    )
    (root / "lzw.pdf").write_bytes(readable)
    assert (await read(tools, root / "lzw.pdf")).sections[0].text == "lzw text"
    before = await busy_children(tools)
    message = await refusal(tools, root / "bomb.pdf", "execution_failed")
    # pypdf's own output limit, not the memory ceiling or the timeout, stops it.
    assert "LimitReachedError: Limit reached while decompressing" in message
    assert await busy_children(tools) == before


@pytest.mark.parametrize(
    "content",
    [
        b"BI /W 8 /H 8 /BPC 8 /CS /G /F /DCT ID \xff\xd8\xff\xe0" + bytes(5000),
        b"BI /W 8 /H 8 /BPC 8 /CS /G /F /A85 ID 9jqo^BlbD-BleB1DJ+*+F(f,q" * 200,
    ],
    ids=["dct-without-eof", "unterminated-ascii85"],
)
async def test_unterminated_inline_images_are_bounded(
    root: Path, tools: DocumentTools, content: bytes
) -> None:
    (root / "inline.pdf").write_bytes(
        pdf_pages([b"BT /F1 12 Tf 72 720 Td (before) Tj ET\n" + content])
    )
    # Bounded: a parse that ran on would end timed_out at the parser timeout instead.
    outcome = await attempt(tools, root / "inline.pdf")
    if isinstance(outcome, ApplicationError):
        assert outcome.type == "execution_failed"
    else:
        assert outcome.format == "pdf"


async def test_broken_xref_structures_are_bounded(root: Path, tools: DocumentTools) -> None:
    page = text_pdf([["hello"]])
    xref = page.rindex(b"startxref\n") + len(b"startxref\n")
    offset = int(page[xref:].split(b"\n")[0])
    # A trailer whose /Prev points back at its own xref section: a cycle.
    circular = page.replace(b"/Root 1 0 R >>", b"/Root 1 0 R /Prev %d >>" % offset)
    no_root = pdf_file([b"<< /Type /Pages /Kids [] /Count 0 >>"], trailer=b"/Size 1000000000")
    for name, data in (("circular.pdf", circular), ("noroot.pdf", no_root)):
        (root / name).write_bytes(data)
        outcome = await attempt(tools, root / name)
        if isinstance(outcome, ApplicationError):
            assert outcome.type == "execution_failed", outcome.message


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("link.pdf", "is or passes through a symbolic link"),
        ("pipe.txt", "not a regular file"),
        ("dir.txt", "a directory"),
        ("missing.pdf", "does not exist"),
    ],
)
async def test_paths_follow_the_file_tools_rules(
    root: Path, tools: DocumentTools, name: str, reason: str
) -> None:
    (root / "real.pdf").write_bytes(text_pdf([["x"]]))
    os.symlink(root / "real.pdf", root / "link.pdf")
    os.mkfifo(root / "pipe.txt")
    (root / "dir.txt").mkdir()
    message = await refusal(tools, root / name)
    assert message == f"read_document: {root / name}: {reason}"


async def test_paths_outside_the_roots_are_refused(root: Path, tools: DocumentTools) -> None:
    assert (await refusal(tools, Path("/etc/hostname.txt"))).endswith(
        "not inside a configured root"
    )
    with pytest.raises(ValueError, match=r"'\.\.' component"):
        ReadDocumentArgs(path=f"{root}/../secret.txt")
    with pytest.raises(ValueError, match="NUL"):
        ReadDocumentArgs(path=f"{root}/a\x00.txt")


async def test_a_hanging_parser_is_killed_at_its_timeout(root: Path) -> None:
    (root / "a.pdf").write_bytes(text_pdf([["x"]]))
    before = children()
    async with document_tools(root, parser=hostile("sleep"), timeout_seconds=1) as tools:
        started = time.monotonic()
        message = await refusal(tools, root / "a.pdf", "timed_out")
    # Stopped at its timeout, not when the parser's 600 s sleep would have ended.
    assert 1 <= time.monotonic() - started < 300
    assert "parsing took longer than 1 s" in message
    assert children() == before


async def test_cancellation_kills_the_parser(root: Path) -> None:
    (root / "a.pdf").write_bytes(text_pdf([["x"]]))
    before = children()
    env = activity_env(heartbeat=0.3)
    async with document_tools(root, parser=hostile("sleep")) as tools:
        task = asyncio.ensure_future(
            env.run(tools.read_document, ReadDocumentArgs(path=f"{root}/a.pdf"), CALL)
        )
        await asyncio.sleep(1.0)
        assert len(await busy_children(tools) - before) == 1
        env.cancel()
        with pytest.raises((asyncio.CancelledError, CancelledError)):
            await asyncio.wait_for(task, 5)
    assert children() == before


async def test_memory_and_cpu_ceilings_stop_the_parser(root: Path) -> None:
    (root / "a.pdf").write_bytes(text_pdf([["x"]]))
    async with document_tools(root, parser=hostile("allocate")) as tools:
        assert "ran out of memory" in await refusal(tools, root / "a.pdf", "execution_failed")
    # RLIMIT_CPU is the parser's own bound, one second past its wall-clock timeout (here 1 s).
    async with document_tools(root, parser=hostile("spin"), timeout_seconds=1) as tools:
        assert await refusal(tools, root / "a.pdf", "timed_out")


async def test_a_flooding_parser_is_cut_off(root: Path) -> None:
    (root / "a.pdf").write_bytes(text_pdf([["x"]]))
    # The longest timeout: only the output's bound may stop it, however loaded the machine.
    async with document_tools(
        root, parser=hostile("flood"), timeout_seconds=MAX_TIMEOUT_SECONDS
    ) as tools:
        message = await refusal(tools, root / "a.pdf", "execution_failed")
    assert "wrote more than" in message


async def test_a_missing_parser_library_is_a_configuration_error(root: Path) -> None:
    (root / "a.pdf").write_bytes(text_pdf([["x"]]))
    async with document_tools(root, parser=hostile("no-pypdf")) as tools:
        message = await refusal(tools, root / "a.pdf", "configuration_error")
    assert message == (
        "read_document: reading pdf needs the documents extra (pypdf): "
        "pip install 'toolcalls[documents]'"
    )


def test_the_parser_confines_itself() -> None:
    import subprocess

    code = (
        "import resource, sys; sys.path.insert(0, sys.argv[1]); import extract; "
        "extract.confine(300_000_000, 7, __import__('os').getppid()); "
        "print(resource.getrlimit(resource.RLIMIT_AS), resource.getrlimit(resource.RLIMIT_CPU),"
        " resource.getrlimit(resource.RLIMIT_FSIZE))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(extract.__file__).parent)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "(300000000, 300000000) (7, 8) (0, 0)"


def test_the_parser_process_imports_nothing_from_the_project() -> None:
    import socket
    import subprocess

    # The real script, started as the tools start it; closing the socket ends it unemployed.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-X",
                "importtime",
                extract.__file__,
                "--parent",
                str(os.getpid()),
            ],
            stdin=theirs.fileno(),
            stderr=subprocess.PIPE,
        )
    _, log = process.communicate(timeout=60)
    assert process.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in log.decode().splitlines()}
    assert {"csv", "zipfile"} <= imported  # what the extraction beside it imports: it was loaded
    assert not imported & {"activities", "worker", "workflows", "temporalio", "pydantic"}
    assert "asyncio" not in imported  # the worker's side of the page reports is not loaded


async def test_a_sheet_title_cannot_inflate_locations(root: Path) -> None:
    # A hand-made workbook may name a sheet with 20,000 characters; every section and match
    # of the sheet repeats its name, which no character limit charges.
    data = xlsx_file({"S": [["v"], [None]] * 100})
    workbook = zipfile.ZipFile(io.BytesIO(data)).read("xl/workbook.xml")
    workbook = workbook.replace(b'name="S"', b'name="' + b"T" * 20_000 + b'"')
    (root / "a.xlsx").write_bytes(rewrite_zip(data, {"xl/workbook.xml": workbook}))
    async with document_tools(root) as tools:
        result = await read(tools, root / "a.xlsx")
        found = await search(tools, root / "a.xlsx", "v", max_results=100)
    assert len(result.sections) == 100
    assert result.sections[0].location == f"sheet {'T' * 31} row 1"
    assert len(result.model_dump_json()) < 20_000
    assert len(found.matches) == 100
    assert found.matches[0].location == f"sheet {'T' * 31} row 1 column 1"


async def test_read_results_stay_under_the_payload_cap_at_the_character_ceiling(
    root: Path,
) -> None:
    # One control character a row costs one character and eleven JSON bytes (["\u0001"],).
    (root / "a.csv").write_bytes(b"a\n\n" + b"\x01\n" * 100_000)
    async with document_tools(root, max_output_chars=100_000) as tools:
        result = await read(tools, root / "a.csv")
    assert len(result.model_dump_json().encode()) <= MAX_RESULT_BYTES
    assert [section.location for section in result.sections] == ["row 1"]
    assert result.truncated is True


class SlowRoots(Roots):
    """Real roots whose opens wait until the test lets them go (a slow filesystem)."""

    def __init__(self, root: Path) -> None:
        super().__init__([root])
        self.entered = threading.Event()
        self.release = threading.Event()

    def open(self, path: str | Located, flags: int = os.O_RDONLY, mode: int = 0) -> int:
        self.entered.set()
        self.release.wait(10)
        return super().open(path, flags, mode)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_cancellation_while_opening_closes_the_descriptor(root: Path) -> None:
    (root / "a.txt").write_text("text")
    roots = SlowRoots(root)
    try:
        tools = DocumentTools(DocumentSettings(roots=[root]), roots)
        before = open_fds()
        task = asyncio.ensure_future(
            tools.read_document(ReadDocumentArgs(path=f"{root}/a.txt"), CALL)
        )
        assert await asyncio.to_thread(roots.entered.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        roots.release.set()
        for _ in range(50):
            await asyncio.sleep(0.02)
            if open_fds() == before:
                break
        assert open_fds() == before
    finally:
        roots.release.set()
        roots.close()
