"""A call's progress stream: what a running tool publishes and what a reader gets back.

A tool publishes ``ProgressEntry`` batches (``ProgressBatch``, one signal each) to its call; the
call numbers what it accepts with offsets (``ProgressItem``) and keeps the latest
``MAX_RETAINED_ITEMS``; a reader asks for a ``ProgressPage`` from an offset (a query, which
writes nothing to history). See docs/progress.md.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

PROGRESS_SIGNAL = "progress"
"""The signal a tool's batches arrive by (``ToolCallWorkflow.progress``)."""
PROGRESS_QUERY = "progress_page"
"""The query a reader pages through the retained items with (``ToolCallWorkflow.progress_page``)."""

MAX_RETAINED_ITEMS = 5_000
"""Items a call keeps; older ones are dropped, and a reader that asks for them is told."""
MAX_BATCH_ITEMS = 1_000
"""Items in one published batch (one signal)."""
MAX_PAGE_ITEMS = 1_000
"""Items in one page a reader gets."""
MAX_PAGE_CHARS = 512 * 1024
"""Characters of text in one page (a query answer stays far below Temporal's payload limits)."""
MAX_TEXT_CHARS = 4_096
"""Characters of one item's text: a longer line is cut into items of this size."""


class ProgressKind(StrEnum):
    STDOUT = "stdout"
    """A line of a command's standard output (without its newline)."""
    STDERR = "stderr"
    """A line of a command's standard error."""
    BYTES = "bytes"
    """Bytes received so far (``done``; ``total`` when the size is announced)."""
    PAGES = "pages"
    """Pages of a document read so far (``done`` of ``total``)."""
    MESSAGES = "messages"
    """Messages an email listing has scanned so far (``done``; ``total`` when the backend knows
    how many it will scan: the messages of the page it fetches headers for)."""
    NOTE = "note"
    """A short message from the tool (``text``): output cut at its cap, say."""


class ProgressEntry(BaseModel):
    """One thing a tool reports as it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ProgressKind
    text: str = ""
    done: int | None = None
    total: int | None = None


class ProgressBatch(BaseModel):
    """Entries one publisher sends in one signal.

    ``publisher`` is the activity's id, the same in every attempt; ``first`` is the position of
    ``entries[0]`` among everything that publisher produced (counted from 0 in each attempt). The
    call accepts only positions it has not seen, so a batch delivered twice, or re-produced by a
    retried attempt, is not appended again.
    """

    model_config = ConfigDict(extra="forbid")

    publisher: str
    first: int = Field(ge=0)
    entries: list[ProgressEntry] = Field(max_length=MAX_BATCH_ITEMS)


class ProgressItem(ProgressEntry):
    """An entry as the call retains it: ``offset`` counts every item the call accepted."""

    offset: int


class ProgressRequest(BaseModel):
    """A reader's query: the items from ``from_offset`` on."""

    model_config = ConfigDict(extra="forbid")

    from_offset: int = Field(default=0, ge=0)
    limit: int = Field(default=MAX_PAGE_ITEMS, ge=1, le=MAX_PAGE_ITEMS)


class ProgressPage(BaseModel):
    """What the call retains from the asked offset, up to a page's size."""

    items: list[ProgressItem] = Field(default_factory=list)
    next_offset: int = 0
    """Where the next page starts: ask again from here."""
    base_offset: int = 0
    """The oldest offset still retained."""
    missed: int = 0
    """Items between the asked offset and ``base_offset`` that were dropped (retention bound)."""
    end_offset: int = 0
    """The offset the next item the call accepts will get (how many it ever accepted)."""
    ended: bool = False
    """The call has its result: nothing more will be published after ``next_offset``."""
