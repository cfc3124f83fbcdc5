"""A document's bounded extraction: its sections under the character and section limits, or
why it is refused.

Refusals happen before any parser runs: a binary format must carry its magic number, an OLE2
container (an encrypted Office file, or a legacy .doc/.xls) is refused by its signature, and an
Office archive is read into memory once, its entry count, declared expanded size and entry
layout checked from the zip central directory, and every entry inflated a chunk at a time up
to its declared size before the library opens it (``check_archive``).

It imports nothing from the project, and is loaded by its path in the parser process
(``extract``): the worker's package is not on that process's ``sys.path``.
"""

from __future__ import annotations

import csv
import datetime
import io
import itertools
import struct
import zipfile
import zlib
from collections.abc import Callable
from typing import IO, Any

FORMATS = {
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".rst": "rst",
    ".log": "log",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".xml": "xml",
    ".csv": "csv",
    ".tsv": "tsv",
    ".pdf": "pdf",
    ".docx": "docx",
    ".xlsx": "xlsx",
}
"""File name extensions (lowercase) and the format each one is read as."""
TEXT_FORMATS = frozenset({"txt", "md", "rst", "log", "json", "yaml", "xml"})
EXTRA_MODULES = {"pdf": "pypdf", "docx": "docx", "xlsx": "openpyxl", "xml": "defusedxml"}
"""The module of the ``documents`` extra each format needs."""

MAX_COLUMNS = 100
"""The spec's column limit: cells past the 100th of a row are dropped (and reported)."""
MAX_SHEET_TITLE_CHARS = 31
"""Excel's limit on a sheet name; a longer one (only a hand-made file has it) is cut to it in
locations, which every section and match of the sheet repeats and no character limit charges."""
MAX_ARCHIVE_ENTRIES = 10_000
"""A DOCX or XLSX with more zip entries than this is refused before parsing."""
INFLATE_CHUNK = 65_536
"""Bytes the archive check reads or inflates at a time: about what it holds in memory."""
ARCHIVE_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
"""What Office writes; ``zipfile`` inflates a bzip2 or LZMA entry with no bound on its output."""
PDF_MAGIC_WINDOW = 1_024
"""``%PDF-`` must start within the first KiB (readers tolerate a little junk before it)."""
ZIP_MAGIC = b"PK\x03\x04"
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_LOCAL_HEADER_BYTES = 30
_ENCRYPTED = 0x1
"""General-purpose flag bit 0 of a zip entry."""


class Refused(Exception):
    """The document cannot be extracted; ``code`` says whose problem it is."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Extraction:
    """Sections collected under the shared character and section limits."""

    def __init__(self, max_chars: int, max_sections: int) -> None:
        self.left = max_chars
        self.max_sections = max_sections
        self.sections: list[dict[str, Any]] = []
        self.truncated = False
        """Something was left out: characters, sections or columns."""
        self.full = False
        """Nothing more fits; the extraction stops."""

    def open_section(self) -> bool:
        """Whether one more section fits; if not, the extraction is truncated."""
        if len(self.sections) >= self.max_sections or self.left <= 0:
            self.truncated = self.full = True
            return False
        return True

    def take(self, text: str) -> str:
        """``text``, cut to the characters left (marking the truncation), and charged."""
        # Lone surrogates (from a broken PDF font map, say) cannot travel as UTF-8 JSON.
        text = text.encode("utf-8", "replace").decode("utf-8")
        if len(text) > self.left:
            text = text[: self.left]
            self.truncated = self.full = True
        self.left -= len(text)
        return text

    def text(self, location: str, text: str) -> bool:
        """Add a text section (blank text adds nothing); ``False`` once nothing more fits."""
        if not text.strip():
            return True
        if not self.open_section():
            return False
        self.sections.append({"location": location, "text": self.take(text)})
        return not self.full

    def result(self, fmt: str) -> dict[str, Any]:
        for section in self.sections:
            if "rows" in section:
                first, count = section["first_row"], len(section["rows"])
                span = f"row {first}" if count == 1 else f"rows {first}-{first + count - 1}"
                section["location"] = f"{section['label']} {span}".lstrip()
        return {"format": fmt, "sections": self.sections, "truncated": self.truncated}


class Rows:
    """Consecutive non-empty rows of one table or sheet, one section per run.

    An empty row ends a run; row numbers are one-based and count empty rows too. A cell costs its
    characters, and at least one, so a table of empty cells cannot grow the output unbounded.
    """

    def __init__(self, out: Extraction, label: str) -> None:
        self.out = out
        self.label = label
        self.current: dict[str, Any] | None = None

    def add(self, number: int, cells: list[str]) -> bool:
        """Add row ``number``; ``False`` once nothing more fits."""
        out = self.out
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            self.current = None
            return True
        if self.current is None:
            if not out.open_section():
                return False
            self.current = {"location": "", "label": self.label, "first_row": number, "rows": []}
            out.sections.append(self.current)
        elif out.left <= 0:
            out.truncated = out.full = True
            return False
        if len(cells) > MAX_COLUMNS:
            cells = cells[:MAX_COLUMNS]
            out.truncated = True
        row: list[str] = []
        for cell in cells:
            if out.left <= 0:
                out.truncated = out.full = True
                break
            kept = out.take(cell)
            if not kept:
                out.left -= 1
            row.append(kept)
        self.current["rows"].append(row)
        return not out.full


def extract(
    stream: IO[bytes],
    fmt: str,
    *,
    max_chars: int,
    max_sections: int,
    max_archive_bytes: int,
    on_page: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The bounded extraction of ``stream`` as ``fmt``; ``on_page(done, total)`` per PDF page."""
    out = Extraction(max_chars, max_sections)
    head = stream.read(PDF_MAGIC_WINDOW)
    stream.seek(0)
    if head.startswith(OLE2_MAGIC):
        raise Refused(
            "encrypted",
            "is an OLE2 container: an encrypted Office document or a legacy .doc/.xls file; "
            "neither is supported",
        )
    if fmt == "pdf":
        if b"%PDF-" not in head:
            raise Refused("refused", "is not a PDF file (no %PDF- header)")
        _pdf(stream, out, on_page or (lambda done, total: None))
    elif fmt in ("docx", "xlsx"):
        if not head.startswith(ZIP_MAGIC):
            raise Refused("refused", f"is not a {fmt.upper()} file (not a zip archive)")
        # One copy, so that the library parses the very bytes the check inflated, even if the
        # file is rewritten in place meanwhile.
        archive = io.BytesIO(stream.read())
        check_archive(archive, fmt, max_archive_bytes)
        (_docx if fmt == "docx" else _xlsx)(archive, out)
    else:
        data = stream.read()
        if b"\x00" in data:
            raise Refused("refused", "is binary (contains NUL bytes), not UTF-8 text")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Refused("refused", f"is not valid UTF-8 (byte {exc.start})") from None
        if fmt in ("csv", "tsv"):
            _table(text, "\t" if fmt == "tsv" else ",", out)
        else:
            if fmt == "xml":
                _check_xml(data)
            _text(text, out)
    return out.result(fmt)


def check_archive(stream: IO[bytes], fmt: str, max_bytes: int) -> None:
    """Refuse an Office archive that promises or holds too much, before any parser reads it.

    From the central directory: at most ``MAX_ARCHIVE_ENTRIES`` entries declaring at most
    ``max_bytes`` expanded bytes together, no two overlapping (the trick of the non-recursive zip
    bombs), none encrypted or compressed other than stored or deflated. Then every entry is
    inflated here, ``INFLATE_CHUNK`` bytes at a time and thrown away, and reading stops one byte
    past its declared size: an entry that inflates to more is refused. The parser libraries rely
    on this, because ``zipfile``, asked for a whole entry, inflates up to 2 GiB in one call before
    it cuts the result to the declared size.
    """
    try:
        with zipfile.ZipFile(stream) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise Refused("refused", f"is not a valid {fmt.upper()} archive ({exc})") from None
    if len(entries) > MAX_ARCHIVE_ENTRIES:
        raise Refused(
            "refused", f"archive has {len(entries)} entries, more than {MAX_ARCHIVE_ENTRIES}"
        )
    declared = sum(entry.file_size for entry in entries)
    if declared > max_bytes:
        raise Refused(
            "refused",
            f"archive expands to {declared} bytes, more than max_archive_bytes ({max_bytes})",
        )
    ordered = sorted(entries, key=lambda e: e.header_offset)
    for entry, following in itertools.pairwise(ordered):
        end = (
            entry.header_offset
            + _LOCAL_HEADER_BYTES
            + len(entry.orig_filename.encode("utf-8", "surrogateescape"))
            + entry.compress_size
        )
        if end > following.header_offset:
            raise Refused("refused", "archive has overlapping entries (a zip bomb)")
    for entry in entries:
        name = entry.filename[:100]
        if entry.flag_bits & _ENCRYPTED:
            raise Refused("encrypted", f"archive entry {name} is encrypted")
        if entry.compress_type not in ARCHIVE_METHODS:
            raise Refused(
                "refused",
                f"archive entry {name} uses compression method {entry.compress_type}; "
                "only stored and deflated entries are read",
            )
        if _inflated(stream, entry) > entry.file_size:
            raise Refused(
                "refused",
                f"archive entry {name} inflates past its declared {entry.file_size} bytes "
                "(a zip bomb)",
            )
    stream.seek(0)


def _inflated(stream: IO[bytes], entry: zipfile.ZipInfo) -> int:
    """How many bytes ``entry`` inflates to, counted a chunk at a time up to one byte past its
    declared size, from the data ``zipfile`` reads for it (after its local header)."""
    stream.seek(entry.header_offset)
    header = stream.read(_LOCAL_HEADER_BYTES)
    if len(header) < _LOCAL_HEADER_BYTES or not header.startswith(ZIP_MAGIC):
        raise Refused("refused", f"archive entry {entry.filename[:100]} has no local header")
    name_length, extra_length = struct.unpack_from("<HH", header, 26)
    stream.seek(entry.header_offset + _LOCAL_HEADER_BYTES + name_length + extra_length)
    deflated = entry.compress_type == zipfile.ZIP_DEFLATED
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    limit = entry.file_size + 1
    left, size, pending = entry.compress_size, 0, b""
    while size < limit:
        if not pending and left > 0:
            pending = stream.read(min(INFLATE_CHUNK, left))
            left = left - len(pending) if pending else 0
        if deflated:
            try:
                chunk = inflater.decompress(pending, min(INFLATE_CHUNK, limit - size))
            except zlib.error as exc:
                raise Refused(
                    "refused", f"archive entry {entry.filename[:100]} is corrupt ({exc})"
                ) from None
            pending = inflater.unconsumed_tail
        else:
            chunk, pending = pending, b""
        size += len(chunk)
        if (deflated and inflater.eof) or not (chunk or pending or left):
            break
    return size


def _check_xml(data: bytes) -> None:
    """Refuse entity declarations and external references; the text itself is never parsed
    for the result, so malformed XML is still returned as text."""
    from defusedxml import DefusedXmlException  # type: ignore[import-untyped]
    from defusedxml.ElementTree import ParseError, fromstring  # type: ignore[import-untyped]

    try:
        fromstring(data)
    except DefusedXmlException as exc:
        raise Refused(
            "refused",
            f"XML declares entities or external references ({type(exc).__name__}); refused",
        ) from None
    except ParseError:
        pass


def _text(text: str, out: Extraction) -> None:
    if not text.strip() or not out.open_section():
        return
    kept = out.take(text)
    lines = kept.count("\n") + (0 if kept.endswith("\n") else 1)
    out.sections.append({"location": f"lines 1-{max(lines, 1)}", "text": kept, "first_line": 1})


def _table(text: str, delimiter: str, out: Extraction) -> None:
    # A record may be as long as the file; the default field limit (128 KiB) would refuse it.
    csv.field_size_limit(len(text) + 1)
    rows = Rows(out, "")
    try:
        records = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        for number, record in enumerate(records, 1):
            if not rows.add(number, record):
                return
    except csv.Error as exc:
        raise Refused("refused", f"is not valid CSV ({exc})") from None


def _pdf(stream: IO[bytes], out: Extraction, on_page: Callable[[int, int], None]) -> None:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(stream)
        if reader.is_encrypted:
            raise Refused("encrypted", "is an encrypted PDF; encrypted documents are not supported")
        total = len(reader.pages)
        for number, page in enumerate(reader.pages, 1):
            if not out.text(f"page {number}", page.extract_text() or ""):
                return
            on_page(number, total)
    except PyPdfError as exc:
        raise Refused("failed", f"cannot be parsed as PDF ({type(exc).__name__}: {exc})") from None


def _docx(stream: IO[bytes], out: Extraction) -> None:
    import docx
    from docx.table import Table

    document = docx.Document(stream)
    paragraphs = tables = 0
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            tables += 1
            rows = Rows(out, f"table {tables}")
            for number, row in enumerate(block.rows, 1):
                if not rows.add(number, [cell.text for cell in row.cells]):
                    return
        else:
            paragraphs += 1
            if not out.text(f"paragraph {paragraphs}", block.text):
                return


def _xlsx(stream: IO[bytes], out: Extraction) -> None:
    import openpyxl  # type: ignore[import-untyped]

    workbook = openpyxl.load_workbook(stream, read_only=True, data_only=True, keep_links=False)
    try:
        for sheet in workbook.worksheets:
            # A sheet's declared dimension (A1:XFD1048576, say) is not trusted: rows are read
            # as they appear, and gaps come back as empty rows, which cost nothing.
            sheet.reset_dimensions()
            rows = Rows(out, f"sheet {sheet.title[:MAX_SHEET_TITLE_CHARS]}")
            for number, values in enumerate(sheet.iter_rows(values_only=True), 1):
                if not rows.add(number, [_cell(value) for value in values]):
                    return
    finally:
        workbook.close()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)
