"""Arguments and results of the read-side file tools, with the limits the model sees."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from toolcalls.activities.base import ToolArgs, ToolResult
from toolcalls.activities.files.paths import lexical_path

MAX_READ_CHARS = 20_000
"""Characters one ``read_file`` call returns at most (the spec's 1-20,000)."""
MAX_RESULTS = 1_000
"""Items one listing or search returns at most (the spec's 1-1,000)."""
DEFAULT_RESULTS = 100
MAX_PATH_CHARS = 4_096
MAX_PATTERN_CHARS = 256
MAX_QUERY_CHARS = 1_000

_PATH_HELP = "Absolute path inside one of the configured roots."
_VCS_HELP = (
    "Also list and enter version-control directories (.git, .hg, .svn, .bzr, _darcs, .pijul, "
    ".jj, .sl, CVS, _MTN), which are skipped by default and counted as vcs_directory."
)


def _glob(value: str) -> str:
    if "/" in value or "\x00" in value:
        raise ValueError("a file name glob cannot contain '/' or NUL")
    return value


class ReadFileArgs(ToolArgs):
    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description=_PATH_HELP)
    offset: int = Field(
        default=0, ge=0, description="Where to start, in Unicode characters from the beginning."
    )
    max_chars: int = Field(
        default=MAX_READ_CHARS,
        ge=1,
        le=MAX_READ_CHARS,
        description="Characters to return, 1-20,000.",
    )

    _path = field_validator("path")(lexical_path)


class ReadFileResult(ToolResult):
    path: str
    content: str
    next_offset: int | None
    """Where the next call continues; ``None`` at the end of the file."""


class ListFilesArgs(ToolArgs):
    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description=_PATH_HELP)
    pattern: str = Field(
        default="*",
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description="Glob on entry names (not paths), case-sensitive: *, ?, [abc].",
    )
    recursive: bool = Field(default=False, description="Also list subdirectories, depth first.")
    max_results: int = Field(default=DEFAULT_RESULTS, ge=1, le=MAX_RESULTS)
    include_vcs: bool = Field(default=False, description=_VCS_HELP)

    _path = field_validator("path")(lexical_path)
    _pattern = field_validator("pattern")(_glob)


class FileItem(ToolResult):
    path: str
    type: Literal["file", "dir", "other"]
    """``other``: a symlink, FIFO, socket or device, never followed."""
    size: int | None
    """Bytes, for files."""


class ListFilesResult(ToolResult):
    path: str
    items: list[FileItem]
    scanned: int
    """Entries visited (at most 10,000)."""
    skipped: int
    skipped_reasons: dict[str, int]
    truncated: bool
    """A limit (results, entries, depth, result size) cut the listing short."""


class SearchFilesArgs(ToolArgs):
    path: str = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description=_PATH_HELP + " A directory is searched recursively; a file on its own.",
    )
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="Literal text (not a regular expression) within one line.",
    )
    pattern: str = Field(
        default="*",
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description="Glob on file names (not paths) to search, case-sensitive.",
    )
    case_sensitive: bool = False
    max_results: int = Field(default=DEFAULT_RESULTS, ge=1, le=MAX_RESULTS)
    include_vcs: bool = Field(
        default=False, description=_VCS_HELP.replace("list and enter", "search")
    )

    _path = field_validator("path")(lexical_path)
    _pattern = field_validator("pattern")(_glob)

    @field_validator("query")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value or "\x00" in value:
            raise ValueError("the query is text within one line: no newline or NUL")
        return value


class SearchMatch(ToolResult):
    path: str
    line: int
    """One-based."""
    text: str
    """At most 500 characters of the line: its start, or a window around the match."""
    text_truncated: bool


class SearchFilesResult(ToolResult):
    path: str
    items: list[SearchMatch]
    scanned: int
    """Entries visited (at most 10,000)."""
    skipped: int
    """Entries not searched: binary, unreadable or oversized files, names no tool accepts, and
    version-control directories."""
    skipped_reasons: dict[str, int]
    truncated: bool
    """A limit (results, entries, depth, 32 MiB read, result size) cut the search short."""
