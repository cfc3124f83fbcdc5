"""``read_document`` and ``search_document``: bounded text and tables from documents in the roots.

What they can touch: regular files below the deployment's document roots, read-only. The worker
opens the file through ``Roots`` (the file tools' rules: absolute paths, no ``..``, no symlinks,
no special files, by the kernel), checks its size, and hands the open descriptor to a parser
process over a Unix socket, where it becomes the parser's standard input, so nothing re-resolves
the path. The parser (``extract``) is started ahead of the call (``warm``) and serves this one
document only, in its own process group, under an address-space and CPU ceiling it sets once the
job is known; the worker heartbeats while it waits (with the pages done the parser reports on
the socket, ``pages``, which also go to the call's progress stream, ``progress``), reads at most
``MAX_PARSER_OUTPUT_BYTES`` of its answer (more with a payload store), and kills the group when
the call ends: on timeout, cancellation or worker shutdown too. A parser that hangs or explodes
costs one killed process, never the worker's event loop or memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from toolcalls.activities.base import CallContext
from toolcalls.activities.child_process import collect, ended
from toolcalls.activities.documents import extract, extraction
from toolcalls.activities.documents.models import (
    DocumentMatch,
    ReadDocumentArgs,
    ReadDocumentResult,
    SearchDocumentArgs,
    SearchDocumentResult,
    Section,
)
from toolcalls.activities.documents.progress import pages_done, reading_pages
from toolcalls.activities.documents.settings import DocumentSettings
from toolcalls.activities.documents.warm import WarmParsers
from toolcalls.activities.errors import tool_error
from toolcalls.activities.family import Extra
from toolcalls.activities.files.paths import Located, PathError, Roots, regular_file
from toolcalls.activities.files.reading import path_failure, refused
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES, output_bytes
from toolcalls.activities.processes.runner import budget_left
from toolcalls.activities.progress import ProgressPublisher, published
from toolcalls.workflows.models.call import ErrorCode

PARSER_SCRIPT = extract.__file__
MAX_PARSER_OUTPUT_BYTES = 4 * 1024 * 1024
"""More than any bounded extraction needs (100,000 characters at 6 JSON bytes and overhead)."""
REPORT_MARGIN = 3.0
"""Seconds kept back from the activity's remaining time to kill the parser and report."""
PARSER_REPORT_MARGIN = 10.0
"""Seconds an activity needs beyond the parser's timeout (open, start, kill, report); the
configuration refuses a ``timeout_seconds`` that leaves less of the start-to-close timeout."""
SNIPPET_CONTEXT = 60
"""Characters of context on each side of a match."""
EXTRA = Extra("documents", tuple(sorted(set(extraction.EXTRA_MODULES.values()))))
"""The parsers; they run on the worker's own interpreter, so what the worker lacks, they lack."""
MAX_RESULT_BYTES = output_bytes(MAX_PAYLOAD_BYTES)
"""A ``read_document`` result's JSON stays below the central payload cap (1 MiB): characters
bound the extraction, but escaping and the brackets of many one-character cells can cost up to
eleven bytes a character; trailing sections that do not fit are left out (``truncated``). With a
payload store the cap is the deployment's result limit, and this grows with it."""
_ENV = {"LC_ALL": "C.UTF-8"}


@dataclass(frozen=True)
class Part:
    """A section as the parser reported it, with what locates a match inside it."""

    section: Section
    label: str = ""
    first_row: int = 1
    first_line: int | None = None


@dataclass(frozen=True)
class Extracted:
    path: str
    format: str
    input_bytes: int
    parts: list[Part]
    truncated: bool


class DocumentTools:
    """The document tools, confined to ``roots``.

    ``parser`` is the command that starts a parser process (``--parent`` is appended; the
    document and its limits come with the job, ``extract.wait_for_job``); it defaults to this
    interpreter running ``extract.py`` in isolated mode. ``result_bytes`` is what a result may
    reach in this deployment (more than 1 MiB with a payload store). ``aclose`` kills the parser
    processes started ahead; the worker calls it when it stops.
    """

    def __init__(
        self,
        settings: DocumentSettings,
        roots: Roots,
        *,
        parser: Sequence[str] | None = None,
        result_bytes: int = MAX_PAYLOAD_BYTES,
    ) -> None:
        self.settings = settings
        self.roots = roots
        self.parser = tuple(parser or (sys.executable, "-I", PARSER_SCRIPT))
        self.parsers = WarmParsers(self.parser, _ENV, settings.warm_parsers)
        self.max_result_bytes = output_bytes(result_bytes)
        # The parser's JSON answer for the largest extraction a result may carry, with room.
        self.max_parser_output = MAX_PARSER_OUTPUT_BYTES * result_bytes // MAX_PAYLOAD_BYTES

    async def aclose(self) -> None:
        """Kill the parser processes waiting for a document."""
        await self.parsers.aclose()

    async def read_document(self, args: ReadDocumentArgs, call: CallContext) -> ReadDocumentResult:
        """The located text and table rows of a document, within the deployment's limits."""
        doc = await self._extract("read_document", args.path)
        result = ReadDocumentResult(
            path=doc.path,
            format=doc.format,
            input_bytes=doc.input_bytes,
            sections=[],
            truncated=doc.truncated,
        )
        room = self.max_result_bytes - len(result.model_dump_json().encode())
        sections: list[Section] = []
        for part in doc.parts:
            room -= len(part.section.model_dump_json().encode()) + 1
            if room < 0:
                return result.model_copy(update={"sections": sections, "truncated": True})
            sections.append(part.section)
        return result.model_copy(update={"sections": sections})

    async def search_document(
        self, args: SearchDocumentArgs, call: CallContext
    ) -> SearchDocumentResult:
        """Located snippets of a literal text (any case) in the bounded extraction."""
        doc = await self._extract("search_document", args.path)
        matches, more = find(doc.parts, args.query, args.max_results)
        return SearchDocumentResult(
            path=doc.path,
            format=doc.format,
            input_bytes=doc.input_bytes,
            matches=matches,
            truncated=more or doc.truncated,
        )

    async def _extract(self, tool: str, path: str) -> Extracted:
        # The path's own checks first: a refused path is never echoed raw in another error.
        located = self._locate(tool, path)
        fmt = document_format(tool, located.path)
        # A cancellation while the file is being opened must not lose its descriptor: the open
        # finishes in its thread, and whatever it opened is closed then.
        opening = asyncio.ensure_future(asyncio.to_thread(self._open, tool, located))
        try:
            fd, size = await asyncio.shield(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_opened)
            raise
        try:
            payload = await self._parse(tool, located.path, fmt, fd)
        finally:
            os.close(fd)
        if "error" in payload:
            raise _parser_error(tool, located.path, fmt, payload, self.settings)
        try:
            parts = [_part(section) for section in payload["sections"]]
            truncated = bool(payload["truncated"])
        except (KeyError, TypeError, ValidationError) as exc:
            raise tool_error(
                ErrorCode.INTERNAL, f"{tool}: {located.path}: malformed parser output ({exc})"
            ) from None
        return Extracted(located.path, fmt, size, parts, truncated)

    def _locate(self, tool: str, path: str) -> Located:
        try:
            return self.roots.locate(path)
        except PathError as exc:
            raise path_failure(tool, exc) from None

    def _open(self, tool: str, located: Located) -> tuple[int, int]:
        try:
            fd = self.roots.open(located, os.O_RDONLY)
        except PathError as exc:
            raise path_failure(tool, exc) from None
        try:
            size = regular_file(fd, located.path).st_size
        except PathError as exc:
            os.close(fd)
            raise path_failure(tool, exc) from None
        except BaseException:
            os.close(fd)
            raise
        limit = self.settings.max_file_bytes
        if size > limit:
            os.close(fd)
            raise refused(tool, located.path, f"is larger than max_file_bytes ({limit} bytes)")
        return fd, size

    def _options(self, fmt: str, timeout: float) -> list[str]:
        """The job's options, as the parser process receives them."""
        s = self.settings
        return [
            "--format",
            fmt,
            "--max-chars",
            str(s.max_output_chars),
            "--max-sections",
            str(s.max_sections),
            "--max-archive-bytes",
            str(s.max_archive_bytes),
            "--memory-bytes",
            str(s.max_memory_bytes),
            # CPU time can only run short of wall time; the wall-clock kill is the real bound.
            "--cpu-seconds",
            str(int(timeout) + 1),
        ]

    async def _parse(self, tool: str, path: str, fmt: str, fd: int) -> dict[str, Any]:
        timeout = self.settings.timeout_seconds
        left = budget_left()
        if left is not None and left - REPORT_MARGIN < timeout:
            timeout = left - REPORT_MARGIN
            if timeout <= 0:
                raise tool_error(
                    ErrorCode.BUDGET_EXCEEDED, f"{tool}: {path}: no time left to parse"
                )
        options = self._options(fmt, timeout)
        parser = await self.parsers.take()
        if not parser.hand_over(options, fd):
            # It died while it waited (killed from outside, say): a new one takes the job, and
            # should it fail too, its end is reported below like any parser's.
            await asyncio.shield(self.parsers.release(parser))
            parser = await self.parsers.start()
            parser.hand_over(options, fd)
        process = parser.process
        try:
            async with (
                Heartbeat(path=path, format=fmt, pid=process.pid) as beat,
                published(ProgressPublisher.for_activity()) as progress,
                reading_pages(parser.channel, pages_done(beat, progress)),
            ):
                out, err, overflow = await asyncio.wait_for(
                    collect(process, self.max_parser_output), timeout
                )
        except TimeoutError:
            raise tool_error(
                ErrorCode.TIMED_OUT,
                f"{tool}: {path}: parsing took longer than {timeout:g} s; the parser was stopped",
            ) from None
        finally:
            await asyncio.shield(self.parsers.release(parser))
        if overflow:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"{tool}: {path}: the parser wrote more than {self.max_parser_output} bytes",
            )
        try:
            payload = json.loads(out)
            if not isinstance(payload, dict):
                raise ValueError("not an object")
        except ValueError:
            raise _died(tool, path, process.returncode, err, self.settings) from None
        return payload


def _close_opened(opening: asyncio.Future[tuple[int, int]]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        os.close(opening.result()[0])


def document_format(tool: str, path: str) -> str:
    """The format a path's extension names; an unknown one is the model's to fix."""
    suffix = PurePosixPath(path).suffix.lower()
    fmt = extraction.FORMATS.get(suffix)
    if fmt is None:
        known = " ".join(extraction.FORMATS)
        raise refused(
            tool, path, f"unsupported document type {suffix or '(no extension)'!r}; known: {known}"
        )
    return fmt


def find(parts: Sequence[Part], query: str, limit: int) -> tuple[list[DocumentMatch], bool]:
    """Up to ``limit`` located matches of ``query`` (literal, any case), and whether there are
    more. ``re.IGNORECASE`` folds case one character at a time, so match offsets stay offsets in
    the original text (``str.lower`` can change lengths)."""
    pattern = re.compile(re.escape(query), re.IGNORECASE)
    matches: list[DocumentMatch] = []
    for part in parts:
        section = part.section
        if section.text is not None:
            for m in pattern.finditer(section.text):
                if len(matches) == limit:
                    return matches, True
                where = section.location
                if part.first_line is not None:
                    where = f"line {part.first_line + section.text.count(chr(10), 0, m.start())}"
                matches.append(DocumentMatch(location=where, snippet=_snippet(section.text, m)))
        for offset, row in enumerate(section.rows or []):
            for column, cell in enumerate(row, 1):
                for m in pattern.finditer(cell):
                    if len(matches) == limit:
                        return matches, True
                    where = f"{part.label} row {part.first_row + offset} column {column}"
                    matches.append(
                        DocumentMatch(location=where.lstrip(), snippet=_snippet(cell, m))
                    )
    return matches, False


def _snippet(text: str, match: re.Match[str]) -> str:
    """The match with some context on its own line, whitespace collapsed."""
    start = max(match.start() - SNIPPET_CONTEXT, text.rfind("\n", 0, match.start()) + 1)
    line_end = text.find("\n", match.end())
    end = match.end() + SNIPPET_CONTEXT
    if line_end != -1:
        end = min(end, line_end)
    return " ".join(text[start:end].split())


def _part(raw: dict[str, Any]) -> Part:
    section = Section(location=raw["location"], text=raw.get("text"), rows=raw.get("rows"))
    return Part(
        section=section,
        label=str(raw.get("label", "")),
        first_row=int(raw.get("first_row", 1)),
        first_line=raw.get("first_line"),
    )


def _parser_error(
    tool: str, path: str, fmt: str, payload: dict[str, Any], settings: DocumentSettings
) -> ApplicationError:
    code, message = payload.get("error"), str(payload.get("message", ""))
    if code in ("refused", "encrypted"):
        return refused(tool, path, message)
    if code == "missing_extra":
        return tool_error(
            ErrorCode.CONFIGURATION_ERROR,
            f"{tool}: reading {fmt} needs the documents extra ({message}): {EXTRA.hint}",
        )
    if code == "memory":
        return _memory(tool, path, settings)
    return tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {path}: {message}")


def _died(
    tool: str, path: str, returncode: int | None, stderr: bytes, settings: DocumentSettings
) -> ApplicationError:
    """The parser ended without an answer: killed by its CPU or memory limit, or crashed."""
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return tool_error(ErrorCode.TIMED_OUT, f"{tool}: {path}: the parser ran out of CPU time")
    if b"MemoryError" in stderr:
        return _memory(tool, path, settings)
    return tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {path}: the parser {ended(returncode)}")


def _memory(tool: str, path: str, settings: DocumentSettings) -> ApplicationError:
    return tool_error(
        ErrorCode.EXECUTION_FAILED,
        f"{tool}: {path}: the parser ran out of memory "
        f"(max_memory_bytes {settings.max_memory_bytes})",
    )
