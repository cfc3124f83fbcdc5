"""Arguments and results of ``read_document`` and ``search_document``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from toolcalls.activities.base import ToolArgs, ToolResult
from toolcalls.activities.files.paths import lexical_path

MAX_PATH_CHARS = 4_096
MAX_QUERY_CHARS = 1_000
DEFAULT_RESULTS = 20
MAX_RESULTS = 100
"""The spec's 1-100 results of one search."""

Format = Literal[
    "txt", "md", "rst", "log", "json", "yaml", "xml", "csv", "tsv", "pdf", "docx", "xlsx"
]

_PATH_HELP = (
    "Absolute path of a document inside one of the configured roots; the format comes from the "
    "extension: .txt .md .rst .log .json .yaml .yml .xml .csv .tsv .pdf .docx .xlsx."
)


class ReadDocumentArgs(ToolArgs):
    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description=_PATH_HELP)

    _path = field_validator("path")(lexical_path)


class SearchDocumentArgs(ToolArgs):
    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description=_PATH_HELP)
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="Literal text (not a regex), matched without regard to case.",
    )
    max_results: int = Field(default=DEFAULT_RESULTS, ge=1, le=MAX_RESULTS)

    _path = field_validator("path")(lexical_path)


class Section(ToolResult):
    """One located part of a document: text, or table rows of string cells."""

    location: str
    """``page 3``, ``paragraph 7``, ``lines 1-40``, ``rows 2-9``, ``table 1 rows 1-4``,
    ``sheet Sales rows 4-9``; rows count from one, empty rows included."""
    text: str | None = None
    rows: list[list[str]] | None = None


class ReadDocumentResult(ToolResult):
    path: str
    format: Format
    input_bytes: int
    sections: list[Section]
    truncated: bool
    """The extraction stopped at the character, section or column limit."""


class DocumentMatch(ToolResult):
    location: str
    """``page 3``, ``paragraph 7``, ``line 12``, ``row 4 column 2``, ``sheet Sales row 4
    column 1``, ``table 1 row 2 column 3``."""
    snippet: str


class SearchDocumentResult(ToolResult):
    path: str
    format: Format
    input_bytes: int
    matches: list[DocumentMatch]
    truncated: bool
    """More matches than ``max_results``, or the extraction searched was itself truncated."""
