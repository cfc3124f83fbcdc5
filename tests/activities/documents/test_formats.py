"""``read_document`` and ``search_document`` on real documents of every format, called as the
activity runs them (a real parser process per call): locations, limits and search."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from tests.support.documents import (
    document_tools,
    docx_file,
    read,
    search,
    text_pdf,
    xlsx_file,
)
from toolcalls.activities.documents import extraction
from toolcalls.activities.documents.tools import DocumentTools


async def test_pdf_pages_are_located_by_number(root: Path, tools: DocumentTools) -> None:
    (root / "report.pdf").write_bytes(
        text_pdf([["Quarterly report", "Revenue (up) 12%"], [], ["Appendix \\ notes"]])
    )
    result = await read(tools, root / "report.pdf")
    assert result.format == "pdf"
    assert result.input_bytes == (root / "report.pdf").stat().st_size
    assert [(s.location, s.text) for s in result.sections] == [
        ("page 1", "Quarterly report\nRevenue (up) 12%"),
        ("page 3", "Appendix \\ notes"),
    ]
    assert result.truncated is False


async def test_docx_paragraphs_and_tables_in_body_order(root: Path, tools: DocumentTools) -> None:
    (root / "memo.docx").write_bytes(
        docx_file(["Intro", [["name", "qty"], ["apple", "3"]], "", "Closing words"])
    )
    result = await read(tools, root / "memo.docx")
    assert [s.model_dump(exclude_none=True) for s in result.sections] == [
        {"location": "paragraph 1", "text": "Intro"},
        {"location": "table 1 rows 1-2", "rows": [["name", "qty"], ["apple", "3"]]},
        {"location": "paragraph 3", "text": "Closing words"},
    ]


async def test_xlsx_rows_with_cached_values_per_sheet(root: Path, tools: DocumentTools) -> None:
    (root / "book.xlsx").write_bytes(
        xlsx_file(
            {
                "Sales": [["name", "qty"], ["apple", 3], [], ["pear", 1.5, True]],
                "Formulas": [[2, 3, "=A1*B1"]],
            }
        )
    )
    result = await read(tools, root / "book.xlsx")
    assert [s.model_dump(exclude_none=True) for s in result.sections] == [
        {"location": "sheet Sales rows 1-2", "rows": [["name", "qty"], ["apple", "3"]]},
        {"location": "sheet Sales row 4", "rows": [["pear", "1.5", "TRUE"]]},
        # openpyxl writes no cached value for a formula, and formulas are never evaluated.
        {"location": "sheet Formulas row 1", "rows": [["2", "3"]]},
    ]


async def test_csv_and_tsv_rows_are_one_based_records(root: Path, tools: DocumentTools) -> None:
    (root / "data.csv").write_text('name,note\n"a, b","two\nlines"\n\nc,d\n')
    (root / "data.tsv").write_text("x\ty\n1\t2\n")
    csv_result = await read(tools, root / "data.csv")
    assert [s.model_dump(exclude_none=True) for s in csv_result.sections] == [
        {"location": "rows 1-2", "rows": [["name", "note"], ["a, b", "two\nlines"]]},
        {"location": "row 4", "rows": [["c", "d"]]},
    ]
    tsv_result = await read(tools, root / "data.tsv")
    assert tsv_result.sections[0].rows == [["x", "y"], ["1", "2"]]


@pytest.mark.parametrize("name", ["a.txt", "b.MD", "c.rst", "d.log", "e.json", "f.yaml", "g.yml"])
async def test_text_formats_are_returned_as_text(
    root: Path, tools: DocumentTools, name: str
) -> None:
    (root / name).write_text("\ufefffirst line\nsecond: {not: parsed}\n")
    result = await read(tools, root / name)
    assert result.format == extraction.FORMATS[Path(name).suffix.lower()]
    assert [(s.location, s.text) for s in result.sections] == [
        ("lines 1-2", "first line\nsecond: {not: parsed}\n")
    ]


async def test_output_chars_are_shared_by_text_and_cells(root: Path) -> None:
    (root / "big.csv").write_text("".join(f"{i:04d},{'x' * 6}\n" for i in range(100)))
    async with document_tools(root, max_output_chars=25) as tools:
        result = await read(tools, root / "big.csv")
    # 10 characters a row: two rows, then five characters of the third.
    assert result.sections[0].rows == [["0000", "xxxxxx"], ["0001", "xxxxxx"], ["0002", "x"]]
    assert result.truncated is True


async def test_empty_cells_cost_a_character_and_columns_stop_at_100(root: Path) -> None:
    (root / "wide.csv").write_text(",".join(["v"] * 150) + "\n" + ",,,,x\n")
    async with document_tools(root) as tools:
        result = await read(tools, root / "wide.csv")
    rows = result.sections[0].rows
    assert rows is not None
    assert len(rows[0]) == 100
    assert rows[1] == ["", "", "", "", "x"]
    assert result.truncated is True
    (root / "empty.csv").write_text(",".join([""] * 50 + ["y"]) + "\n")
    async with document_tools(root, max_output_chars=10) as tools:
        cut = await read(tools, root / "empty.csv")
    assert cut.sections[0].rows == [[""] * 10]
    assert cut.truncated is True


async def test_sections_are_limited(root: Path) -> None:
    (root / "pages.pdf").write_bytes(text_pdf([[f"page {i}"] for i in range(1, 6)]))
    async with document_tools(root, max_sections=3) as tools:
        result = await read(tools, root / "pages.pdf")
    assert [s.location for s in result.sections] == ["page 1", "page 2", "page 3"]
    assert result.truncated is True


async def test_text_is_cut_at_the_character_limit(root: Path) -> None:
    (root / "long.md").write_text("line\n" * 100)
    async with document_tools(root, max_output_chars=12) as tools:
        result = await read(tools, root / "long.md")
    assert [(s.location, s.text) for s in result.sections] == [("lines 1-3", "line\nline\nli")]
    assert result.truncated is True


async def test_search_locates_matches_in_every_kind_of_section(
    root: Path, tools: DocumentTools
) -> None:
    (root / "r.pdf").write_bytes(text_pdf([["nothing here"], ["The REVENUE grew", "revenue!"]]))
    (root / "b.xlsx").write_bytes(xlsx_file({"Sales": [["a", "b"], ["c", "Revenue total"]]}))
    (root / "m.docx").write_bytes(docx_file(["revenue in a paragraph", [["x", "REVENUE"]]]))
    (root / "n.txt").write_text("one\ntwo revenue\n")
    pdf = await search(tools, root / "r.pdf", "revenue")
    assert [(m.location, m.snippet) for m in pdf.matches] == [
        ("page 2", "The REVENUE grew"),
        ("page 2", "revenue!"),
    ]
    sheet = await search(tools, root / "b.xlsx", "revenue")
    assert [(m.location, m.snippet) for m in sheet.matches] == [
        ("sheet Sales row 2 column 2", "Revenue total")
    ]
    memo = await search(tools, root / "m.docx", "Revenue")
    assert [m.location for m in memo.matches] == ["paragraph 1", "table 1 row 1 column 2"]
    text = await search(tools, root / "n.txt", "REVENUE")
    assert [(m.location, m.snippet) for m in text.matches] == [("line 2", "two revenue")]
    assert not any(r.truncated for r in (pdf, sheet, memo, text))


async def test_search_is_literal_bounded_and_reports_truncation(
    root: Path, tools: DocumentTools
) -> None:
    (root / "n.txt").write_text("a.b axb " * 10 + "\n" + "x" * 300 + "a.b" + "y" * 300)
    literal = await search(tools, root / "n.txt", "A.B", max_results=100)
    assert len(literal.matches) == 11
    snippet = literal.matches[-1].snippet
    assert snippet == "x" * 60 + "a.b" + "y" * 60
    capped = await search(tools, root / "n.txt", "a.b", max_results=3)
    assert len(capped.matches) == 3
    assert capped.truncated is True
    async with document_tools(root, max_output_chars=40) as small:
        cut = await search(small, root / "n.txt", "zzz")
    assert cut.matches == []
    assert cut.truncated is True  # nothing found in a cut extraction proves nothing


async def test_unknown_extension_and_binary_text_are_refused(
    root: Path, tools: DocumentTools
) -> None:
    (root / "tool.exe").write_bytes(b"MZ")
    (root / "bin.txt").write_bytes(b"abc\x00def")
    (root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "fake.pdf").write_text("not a pdf at all")
    (root / "fake.docx").write_text("not a zip")
    messages = {}
    for name in ("tool.exe", "bin.txt", "latin.txt", "fake.pdf", "fake.docx"):
        with pytest.raises(ApplicationError) as caught:
            await read(tools, root / name)
        assert caught.value.type == "invalid_arguments"
        assert caught.value.details[0]["fixable_args"] == ["path"]
        messages[name] = caught.value.message
    assert "unsupported document type '.exe'" in messages["tool.exe"]
    assert messages["bin.txt"].endswith("is binary (contains NUL bytes), not UTF-8 text")
    assert messages["latin.txt"].endswith("is not valid UTF-8 (byte 3)")
    assert messages["fake.pdf"].endswith("is not a PDF file (no %PDF- header)")
    assert messages["fake.docx"].endswith("is not a DOCX file (not a zip archive)")


async def test_files_over_max_file_bytes_are_refused_before_parsing(root: Path) -> None:
    (root / "big.txt").write_text("x" * 101)
    async with document_tools(root, max_file_bytes=100) as tools:
        with pytest.raises(ApplicationError, match=r"larger than max_file_bytes \(100 bytes\)"):
            await read(tools, root / "big.txt")
