"""``read_file``, ``list_files`` and ``search_files``: bounded reads inside the configured roots.

What they can touch: regular files and directories below the deployment's roots, read-only.
Every open goes through ``Roots`` (``paths``): lexical checks first, then the kernel opens the
path from the root's descriptor refusing symlinks, escapes and other filesystems; a tree is walked
by directory descriptors (``tree``), never by resolving path strings again. Symlinks, FIFOs,
sockets and devices are listed as ``other`` and never read. All filesystem work runs in a thread,
off the event loop every activity of the worker shares; ``search_files`` heartbeats its progress
from the loop while the thread works, and stops the thread when the call is canceled.
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from fnmatch import translate
from typing import Any, TypeVar

from temporalio.exceptions import ApplicationError

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.files.matching import Matcher
from toolcalls.activities.files.paths import Located, PathError, Roots, regular_file
from toolcalls.activities.files.read_models import (
    FileItem,
    ListFilesArgs,
    ListFilesResult,
    ReadFileArgs,
    ReadFileResult,
    SearchFilesArgs,
    SearchFilesResult,
)
from toolcalls.activities.files.searching import MAX_RESULT_BYTES, Search, json_size, read_up_to
from toolcalls.activities.files.settings import FilesSettings
from toolcalls.activities.files.tree import Entry, Kind, WalkStats, walk
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.workflows.models.call import ErrorCode

PROGRESS_INTERVAL = 0.05
"""Seconds between copies of a search's progress into the heartbeat details."""
STOP_GRACE = 5.0
"""Seconds a canceled search waits for its thread to stop, to report what it found."""
_ITEM_OVERHEAD = 48
"""JSON bytes of a listing item besides its path, rounded up."""

_MODEL_FIXABLE = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ELOOP,
        errno.EXDEV,
        errno.ENAMETOOLONG,
        errno.ENXIO,
    }
)
"""Open failures that say the path is wrong (missing, a link, a file for a directory, ...)."""

T = TypeVar("T")


class FileReadTools:
    """The read-side file tools, confined to ``roots`` (one ``Roots``, shared with the writes)."""

    def __init__(self, settings: FilesSettings, roots: Roots) -> None:
        self.settings = settings
        self.roots = roots

    async def read_file(self, args: ReadFileArgs, call: CallContext) -> ReadFileResult:
        """Up to ``max_chars`` characters of a UTF-8 text file, from ``offset``."""
        return await asyncio.to_thread(self._read_file, args)

    async def list_files(self, args: ListFilesArgs, call: CallContext) -> ListFilesResult:
        """Entries of a directory (optionally its tree) whose names match a glob."""
        return await asyncio.to_thread(self._list_files, args)

    async def search_files(self, args: SearchFilesArgs, call: CallContext) -> SearchFilesResult:
        """Lines containing a literal text in a file or the files below a directory."""
        search = Search(
            Matcher(args.query, case_sensitive=args.case_sensitive),
            max_results=args.max_results,
            max_file_bytes=self.settings.max_file_bytes,
        )
        stop = threading.Event()
        work = asyncio.ensure_future(asyncio.to_thread(self._search_files, args, search, stop))
        try:
            async with Heartbeat(**vars(search.progress)) as beat:
                while not work.done():
                    await asyncio.wait({work}, timeout=PROGRESS_INTERVAL)
                    beat.update(**vars(search.progress))
        except asyncio.CancelledError:
            # A thread cannot be interrupted, but the walk checks ``stop`` between entries; what
            # it found by then goes back with the cancellation.
            stop.set()
            await asyncio.wait({work}, timeout=STOP_GRACE)
            if not work.done():
                work.add_done_callback(_discard)
            elif not work.cancelled() and work.exception() is None:
                raise tool_error(
                    ErrorCode.CANCELED,
                    f"search_files: {args.path}: canceled",
                    output=work.result().model_dump(mode="json"),
                ) from None
            raise
        return work.result()

    def _read_file(self, args: ReadFileArgs) -> ReadFileResult:
        tool = "read_file"
        located = _locate(self.roots, tool, args.path)
        data = _guard(tool, located.path, lambda: self._read_whole(located))
        if b"\x00" in data:
            raise refused(tool, located.path, "is binary (contains NUL bytes)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise refused(tool, located.path, f"is not valid UTF-8 (byte {exc.start})") from None
        if args.offset > len(text):
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"{tool}: {located.path}: offset {args.offset} is past the end "
                f"({len(text)} characters)",
                fixable_args=["offset"],
            )
        content = text[args.offset : args.offset + args.max_chars]
        end = args.offset + len(content)
        return ReadFileResult(
            path=located.path, content=content, next_offset=end if end < len(text) else None
        )

    def _read_whole(self, located: Located) -> bytes:
        limit = self.settings.max_file_bytes
        fd = self.roots.open(located, os.O_RDONLY)
        try:
            if regular_file(fd, located.path).st_size > limit:
                raise _oversized("read_file", located.path, limit)
            # One byte more than allowed tells a file that grew since fstat from one that did not.
            data = read_up_to(fd, limit + 1)
        finally:
            os.close(fd)
        if len(data) > limit:
            raise _oversized("read_file", located.path, limit)
        return data

    def _list_files(self, args: ListFilesArgs) -> ListFilesResult:
        tool = "list_files"
        located = _locate(self.roots, tool, args.path)
        matches = _glob(args.pattern)
        stats = WalkStats()
        items: list[FileItem] = []
        size = 0
        flags = os.O_RDONLY | os.O_DIRECTORY
        fd = _guard(tool, located.path, lambda: self.roots.open(located, flags))
        entries = walk(
            self.roots,
            fd,
            located.path,
            stats,
            recursive=args.recursive,
            include_vcs=args.include_vcs,
        )
        try:
            for entry in entries:
                if not matches(entry.name):
                    continue
                size += json_size(entry.path) + _ITEM_OVERHEAD
                if len(items) == args.max_results or size > MAX_RESULT_BYTES:
                    stats.truncated = True
                    break
                items.append(FileItem(path=entry.path, type=entry.kind.value, size=_size(entry)))
        except OSError as exc:
            raise _failed(tool, located.path, exc) from None
        finally:
            entries.close()
            os.close(fd)
        return ListFilesResult(
            path=located.path,
            items=items,
            scanned=stats.scanned,
            skipped=stats.skipped_total,
            skipped_reasons=stats.reasons(),
            truncated=stats.truncated,
        )

    def _search_files(
        self, args: SearchFilesArgs, search: Search, stop: threading.Event
    ) -> SearchFilesResult:
        tool = "search_files"
        located = _locate(self.roots, tool, args.path)
        stats = search.stats
        fd = _guard(tool, located.path, lambda: self.roots.open(located, os.O_RDONLY))
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISREG(mode):
                stats.scanned = search.progress.scanned = 1
                search.file(fd, located.path)
            elif stat.S_ISDIR(mode):
                matches = _glob(args.pattern)
                self._search_tree(fd, located.path, search, matches, args.include_vcs, stop)
            else:
                raise refused(tool, located.path, "is not a regular file or directory")
        except OSError as exc:
            raise _failed(tool, located.path, exc) from None
        finally:
            os.close(fd)
        return SearchFilesResult(
            path=located.path,
            items=search.items,
            scanned=stats.scanned,
            skipped=stats.skipped_total,
            skipped_reasons=stats.reasons(),
            truncated=stats.truncated,
        )

    def _search_tree(
        self,
        fd: int,
        path: str,
        search: Search,
        matches: Callable[[str], bool],
        include_vcs: bool,
        stop: threading.Event,
    ) -> None:
        stats = search.stats
        tree = walk(self.roots, fd, path, stats, recursive=True, include_vcs=include_vcs, stop=stop)
        with closing(tree) as entries:
            self._search_entries(entries, search, matches)

    def _search_entries(
        self, entries: Iterator[Entry], search: Search, matches: Callable[[str], bool]
    ) -> None:
        stats = search.stats
        for entry in entries:
            search.progress.scanned = stats.scanned
            if entry.kind is not Kind.FILE or not matches(entry.name):
                continue
            try:
                file_fd = self.roots.open_entry(entry.dir_fd, entry.name, entry.path)
            except PathError as exc:
                stats.skip_error(exc)
                continue
            try:
                search.file(file_fd, entry.path)
            finally:
                os.close(file_fd)
            if search.done:
                return


def _size(entry: Entry) -> int | None:
    if entry.kind is not Kind.FILE:
        return None
    try:
        return entry.entry.stat(follow_symlinks=False).st_size
    except OSError:
        return None


def _glob(pattern: str) -> Callable[[str], bool]:
    """A name matcher with ``fnmatchcase`` semantics, compiled once for the whole walk."""
    if pattern == "*":
        return lambda name: True
    match = re.compile(translate(pattern)).match
    return lambda name: match(name) is not None


def _discard(future: asyncio.Future[Any]) -> None:
    """Retrieve the outcome of work nobody waits for any more, so asyncio does not log it."""
    if not future.cancelled():
        future.exception()


def _locate(roots: Roots, tool: str, path: str) -> Located:
    try:
        return roots.locate(path)
    except PathError as exc:
        raise path_failure(tool, exc) from None


def _guard(tool: str, path: str, action: Callable[[], T]) -> T:
    """``action``'s value; its ``PathError`` or ``OSError`` becomes the tool's error."""
    try:
        return action()
    except PathError as exc:
        raise path_failure(tool, exc) from None
    except OSError as exc:
        raise _failed(tool, path, exc) from None


def path_failure(tool: str, exc: PathError) -> ApplicationError:
    # A path the rules refuse, or that names nothing usable, is the model's to change; a
    # permission or I/O failure on a good path is not.
    if exc.errno is None or exc.errno in _MODEL_FIXABLE:
        return tool_error(ErrorCode.INVALID_ARGUMENTS, f"{tool}: {exc}", fixable_args=["path"])
    return tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {exc}")


def refused(tool: str, path: str, reason: str) -> ApplicationError:
    return tool_error(
        ErrorCode.INVALID_ARGUMENTS, f"{tool}: {path}: {reason}", fixable_args=["path"]
    )


def _oversized(tool: str, path: str, limit: int) -> ApplicationError:
    return refused(tool, path, f"is larger than {limit} bytes")


def _failed(tool: str, path: str, exc: OSError) -> ApplicationError:
    reason = (exc.strerror or str(exc)).lower()
    return tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {path}: {reason}")
