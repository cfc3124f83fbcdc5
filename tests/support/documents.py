"""Real documents made by the tests: PDFs written object by object, DOCX and XLSX through their
libraries, and hostile variants (bombs, lies, encryption, entity tricks), plus the document tools
over a root."""

from __future__ import annotations

import io
import itertools
import struct
import sys
import zipfile
import zlib
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import docx
import openpyxl  # type: ignore[import-untyped]
from pypdf import PdfReader, PdfWriter
from temporalio.testing import ActivityEnvironment

from tests.support import processes
from tests.support.children import children
from toolcalls.activities.base import CallContext
from toolcalls.activities.documents.models import (
    ReadDocumentArgs,
    ReadDocumentResult,
    SearchDocumentArgs,
    SearchDocumentResult,
)
from toolcalls.activities.documents.settings import DocumentSettings
from toolcalls.activities.documents.tools import DocumentTools
from toolcalls.activities.files.paths import Roots

CALL = CallContext(
    workflow_id="wf", call_id="call", idempotency_key="wf:call", approval=None, precondition=None
)
HOSTILE_PARSER = Path(__file__).with_name("hostile_parser.py")


def pdf_file(objects: Sequence[bytes], *, trailer: bytes = b"/Root 1 0 R") -> bytes:
    """A PDF of ``objects`` (object ``i + 1`` is ``objects[i]``) with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d " % (len(objects) + 1) + trailer + b" >>\n"
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def stream(data: bytes, entries: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n" % (len(data), entries) + data + b"\nendstream"


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("latin-1") + b")"


def text_content(lines: Sequence[str]) -> bytes:
    """A content stream drawing ``lines`` in 12 pt Helvetica, top down."""
    ops = [b"BT", b"/F1 12 Tf", b"72 720 Td"]
    for index, line in enumerate(lines):
        if index:
            ops.append(b"0 -14 Td")
        ops.append(_pdf_string(line) + b" Tj")
    ops.append(b"ET")
    return b"\n".join(ops)


def pdf_pages(contents: Sequence[bytes], *, content_entries: bytes = b"") -> bytes:
    """A PDF with one page per content stream, Helvetica as ``/F1``."""
    count = len(contents)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for index, content in enumerate(contents):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * index)
        )
        objects.append(stream(content, content_entries))
    return pdf_file(objects)


def text_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """A PDF whose page ``i`` shows the lines ``pages[i]``."""
    return pdf_pages([text_content(lines) for lines in pages])


def encrypted_pdf(pages: Sequence[Sequence[str]], password: str = "secret") -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf(pages))))
    writer.encrypt(password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_file(blocks: Sequence[str | Sequence[Sequence[str]]]) -> bytes:
    """A DOCX whose body holds paragraphs (strings) and tables (lists of rows), in order."""
    document = docx.Document()
    for block in blocks:
        if isinstance(block, str):
            document.add_paragraph(block)
        else:
            table = document.add_table(rows=len(block), cols=len(block[0]))
            for r, row in enumerate(block):
                for c, value in enumerate(row):
                    table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_file(sheets: dict[str, Sequence[Sequence[Any]]]) -> bytes:
    """An XLSX with the given sheets; each row a list of values placed from column A."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for r, row in enumerate(rows, 1):
            for c, value in enumerate(row, 1):
                if value is not None:
                    sheet.cell(row=r, column=c, value=value)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def rewrite_zip(data: bytes, changes: dict[str, bytes]) -> bytes:
    """``data``, a zip, with the named entries replaced or added."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename not in changes:
                target.writestr(info, source.read(info))
        for name, content in changes.items():
            target.writestr(name, content)
    return out.getvalue()


def declare_size(data: bytes, name: str, size: int) -> bytes:
    """``data`` with the uncompressed size the central directory declares for ``name`` set to
    ``size`` (the entry's bytes are unchanged: a lie either way)."""
    out = bytearray(data)
    encoded = name.encode()
    at = 0
    while (at := out.find(b"PK\x01\x02", at)) != -1:
        name_len = struct.unpack_from("<H", out, at + 28)[0]
        if bytes(out[at + 46 : at + 46 + name_len]) == encoded:
            struct.pack_into("<I", out, at + 24, size)
            return bytes(out)
        at += 4
    raise KeyError(name)


def deflate_zeros(size: int) -> bytes:
    """A raw deflate stream of ``size`` zero bytes (a multiple of 1 MiB), built from one
    compressed MiB repeated: inflating gigabytes takes seconds, compressing them would too."""
    mib = 1 << 20
    assert size % mib == 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    # A full flush ends each MiB on a byte boundary with a fresh dictionary: every block is alike.
    block = compressor.compress(bytes(mib)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return block * (size // mib) + compressor.flush()


def lying_entry(data: bytes, name: str, deflated: bytes, declared: int) -> bytes:
    """``data``, a zip, whose entry ``name`` holds the raw deflate stream ``deflated`` while both
    its headers declare ``declared`` bytes expanded, with the CRC-32 of the first ``declared``
    bytes the stream inflates to (so that a reader stopping there finds the CRC right)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename == name:
                target.writestr(name, deflated, compress_type=zipfile.ZIP_STORED)
            else:
                target.writestr(info, source.read(info))
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    crc = zlib.crc32(inflater.decompress(deflated, declared)) if declared else 0
    patched = bytearray(out.getvalue())
    at = 0
    while (at := patched.find(b"PK\x01\x02", at)) != -1:
        name_len = struct.unpack_from("<H", patched, at + 28)[0]
        if bytes(patched[at + 46 : at + 46 + name_len]) == name.encode():
            local = struct.unpack_from("<I", patched, at + 42)[0]
            # Method, CRC-32 and expanded size: central record at 10/16/24, local at 8/14/22.
            for method, checksum, size in (
                (at + 10, at + 16, at + 24),
                (local + 8, local + 14, local + 22),
            ):
                struct.pack_into("<H", patched, method, zipfile.ZIP_DEFLATED)
                struct.pack_into("<I", patched, checksum, crc)
                struct.pack_into("<I", patched, size, declared)
            return bytes(patched)
        at += 4
    raise KeyError(name)


def duplicate_entry(data: bytes, name: str, alias: str) -> bytes:
    """``data`` with a second central directory record, ``alias``, for ``name``'s local entry:
    two entries overlapping in the file, as the non-recursive zip bombs do."""
    assert len(alias) == len(name)
    end = data.rfind(b"PK\x05\x06")
    entries = struct.unpack_from("<H", data, end + 10)[0]
    cd_size, cd_offset = struct.unpack_from("<II", data, end + 12)
    directory = data[cd_offset : cd_offset + cd_size]
    at = directory.find(b"PK\x01\x02")
    while at != -1:
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", directory, at + 28)
        record_end = at + 46 + name_len + extra_len + comment_len
        if directory[at + 46 : at + 46 + name_len] == name.encode():
            record = bytearray(directory[at:record_end])
            record[46 : 46 + name_len] = alias.encode()
            break
        at = directory.find(b"PK\x01\x02", record_end)
    else:
        raise KeyError(name)
    new_directory = directory + bytes(record)
    tail = bytearray(data[end:])
    struct.pack_into("<HHII", tail, 8, entries + 1, entries + 1, len(new_directory), cd_offset)
    return data[:cd_offset] + new_directory + bytes(tail)


def many_entries(count: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        for index in range(count):
            archive.writestr(f"xl/e{index}.xml", b"")
    return out.getvalue()


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<lolz>&lol9;</lolz>
"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<r>&x;</r>
"""


@asynccontextmanager
async def document_tools(
    root: Path, *, parser: Sequence[str] | None = None, **settings: Any
) -> AsyncIterator[DocumentTools]:
    """The document tools over ``root``; their parser processes are killed at the end."""
    roots = Roots([root])
    tools = DocumentTools(DocumentSettings(roots=[root], **settings), roots, parser=parser)
    try:
        yield tools
    finally:
        await tools.aclose()
        roots.close()


async def spare_parsers(tools: DocumentTools) -> set[int]:
    """The parser processes started ahead of a call and waiting for one."""
    return set(await tools.parsers.waiting())


async def busy_children(tools: DocumentTools) -> set[int]:
    """This process's live children but the parsers waiting for a call."""
    spare = await spare_parsers(tools)
    return children() - spare


def hostile(mode: str) -> list[str]:
    """A parser command that confines itself like the real one, then misbehaves."""
    return [sys.executable, str(HOSTILE_PARSER), mode]


def activity_env(heartbeat: float | None = 1.0, start_to_close: float = 60) -> ActivityEnvironment:
    return processes.activity_env(
        activity_type="read_document", heartbeat=heartbeat, start_to_close=start_to_close
    )


async def read(
    tools: DocumentTools, path: Path | str, env: ActivityEnvironment | None = None
) -> ReadDocumentResult:
    """``read_document`` in an activity context (it heartbeats)."""
    result: ReadDocumentResult = await (env or activity_env()).run(
        tools.read_document, ReadDocumentArgs(path=str(path)), CALL
    )
    return result


async def search(
    tools: DocumentTools, path: Path | str, query: str, **args: Any
) -> SearchDocumentResult:
    result: SearchDocumentResult = await activity_env().run(
        tools.search_document, SearchDocumentArgs(path=str(path), query=query, **args), CALL
    )
    return result


def zlib_twice(data: bytes) -> bytes:
    return zlib.compress(zlib.compress(data, 9), 9)


LZW_CLEAR = 256
"""The clear-table code of PDF ``/LZWDecode``: the table restarts, codes are 9 bits again."""
LZW_EOD = 257
_LZW_FIRST = 258
"""The first code the table assigns after a clear."""
_LZW_LAST = 4095
"""The last: 12-bit codes, at most."""
LZW_CYCLE_BYTES = 1 + sum(range(2, _LZW_LAST - _LZW_FIRST + 3))
"""What one full table of ``lzw_bomb`` decodes to: 7,370,880 bytes from 3,840 codes."""


def _lzw_pack(codes: Iterable[int]) -> bytes:
    """``codes`` packed high-order bit first, each at the width a PDF reader expects with
    ``/EarlyChange 1`` (the default, and all pypdf reads): the reader adds a table entry for every
    code but the first after a clear, and reads 10, 11 and 12 bits from the code where its table
    holds 511, 1023 and 2047 entries, one code before a new entry would need them."""
    out = bytearray()
    buffer = bits = 0
    table = _LZW_FIRST
    adds = False
    for code in codes:
        width = 9 if table < 511 else 10 if table < 1023 else 11 if table < 2047 else 12
        assert code < 1 << width
        buffer = buffer << width | code
        bits += width
        while bits >= 8:
            bits -= 8
            out.append(buffer >> bits & 0xFF)
        buffer &= (1 << bits) - 1
        if code == LZW_CLEAR:
            table, adds = _LZW_FIRST, False
        elif code != LZW_EOD:
            if adds and table <= _LZW_LAST:
                table += 1
            adds = True
    if bits:
        out.append(buffer << (8 - bits) & 0xFF)
    return bytes(out)


def lzw_encode(data: bytes) -> bytes:
    """``data`` compressed for ``/Filter /LZWDecode`` (PDF 32000-1 7.4.4): a clear-table code
    first, a new one whenever the 12-bit table is full, the end-of-data code last."""
    codes = [LZW_CLEAR]
    table = {bytes([i]): i for i in range(256)}
    next_code = _LZW_FIRST
    current = b""
    for byte in data:
        extended = current + bytes([byte])
        if extended in table:
            current = extended
            continue
        codes.append(table[current])
        if next_code <= _LZW_LAST:
            table[extended] = next_code
            next_code += 1
        else:
            codes.append(LZW_CLEAR)
            table = {bytes([i]): i for i in range(256)}
            next_code = _LZW_FIRST
        current = bytes([byte])
    if current:
        codes.append(table[current])
    codes.append(LZW_EOD)
    return _lzw_pack(codes)


def lzw_bomb(size: int, byte: int = 0x20) -> bytes:
    """An ``/LZWDecode`` stream of at least ``size`` copies of ``byte``, written code by code
    (encoding gigabytes would take as long as decoding them): after each clear, ``byte`` and then
    every code of the table, each the previous string and one more ``byte`` (the reader builds
    it from the code it is reading), so 3,840 codes (5.4 KB) decode to ``LZW_CYCLE_BYTES``."""
    cycle = [LZW_CLEAR, byte, *range(_LZW_FIRST, _LZW_LAST + 1)]
    cycles = -(-size // LZW_CYCLE_BYTES)
    return _lzw_pack(itertools.chain(itertools.chain.from_iterable([cycle] * cycles), [LZW_EOD]))
