"""Walking a directory tree by descriptors, bounded in entries and depth.

The walk starts from a directory descriptor that ``Roots`` opened and enters each subdirectory
with ``Roots.open_entry`` from its parent's descriptor: no path string is ever resolved again,
no link is followed (symlinks, like FIFOs, sockets and devices, are reported as ``other`` and not
entered), and no other filesystem is entered. Entries come in the order the filesystem lists them,
depth first; the walk stops after ``MAX_ENTRIES`` entries and does not enter directories more than
``MAX_DEPTH`` levels deep, and says so in its ``WalkStats``.

Entries no tool could name are left out and counted: names that are not UTF-8, and names with a
character every path refuses (``names``), which shown raw could break or reorder the result; such
a directory is not entered either. Version-control directories (``VCS_DIRECTORIES``) are left out
and not entered unless the caller asks for them.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field
from enum import StrEnum

from toolcalls.activities.files.names import refused_character
from toolcalls.activities.files.paths import MAX_PATH_BYTES, PathError, Roots

MAX_ENTRIES = 10_000
"""Entries one traversal visits at most (the spec's 10,000)."""
MAX_DEPTH = 20
"""Directory levels one traversal reads at most, the starting directory being the first."""
VCS_DIRECTORIES = frozenset(
    {".git", ".hg", ".svn", ".bzr", "_darcs", ".pijul", ".jj", ".sl", "CVS", "_MTN"}
)
"""Metadata directories version-control systems keep in a working tree (Git, Mercurial,
Subversion, Bazaar, Darcs, Pijul, Jujutsu, Sapling, CVS, Monotone): the history's internals,
often thousands of entries that would use up a walk's limits and bury the files themselves."""


class Kind(StrEnum):
    FILE = "file"
    DIR = "dir"
    OTHER = "other"
    """A symlink, FIFO, socket or device: listed, never followed, opened or searched."""


class Skip(StrEnum):
    """Why an entry was left out; the tools report a count per reason."""

    UNREADABLE = "unreadable"
    OTHER_FILESYSTEM = "other_filesystem"
    UNDECODABLE_NAME = "undecodable_name"
    """The name is not UTF-8, so no result could name it and no tool could open it."""
    REFUSED_NAME = "refused_name"
    """The name has a character every path refuses (a control, an invisible format character, a
    backslash): no tool would open it, and shown raw it could break or reorder the result."""
    VCS_DIRECTORY = "vcs_directory"
    """A version-control directory, neither listed nor entered unless asked for."""
    PATH_TOO_LONG = "path_too_long"
    BINARY = "binary"
    OVERSIZED = "oversized"


@dataclass
class WalkStats:
    """What a walk (and the tool driving it) visited, left out, and cut short."""

    scanned: int = 0
    skipped: Counter[Skip] = field(default_factory=Counter)
    truncated: bool = False

    def skip(self, reason: Skip) -> None:
        self.skipped[reason] += 1

    def skip_error(self, exc: PathError | OSError) -> None:
        self.skip(Skip.OTHER_FILESYSTEM if exc.errno == errno.EXDEV else Skip.UNREADABLE)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def reasons(self) -> dict[str, int]:
        return {reason.value: count for reason, count in sorted(self.skipped.items())}


@dataclass(frozen=True)
class Entry:
    """One directory entry; ``dir_fd`` (its directory) stays open until the walk moves on."""

    path: str
    name: str
    kind: Kind
    dir_fd: int
    depth: int
    """1 for the entries of the starting directory."""
    entry: os.DirEntry[str]


@dataclass
class _Frame:
    fd: int
    entries: os._ScandirIterator[str]
    path: str
    depth: int


def walk(
    roots: Roots,
    top_fd: int,
    top_path: str,
    stats: WalkStats,
    *,
    recursive: bool,
    include_vcs: bool = False,
    stop: threading.Event | None = None,
    max_entries: int = MAX_ENTRIES,
    max_depth: int = MAX_DEPTH,
) -> Generator[Entry, None, None]:
    """The entries below ``top_fd`` (a directory descriptor the caller keeps owning).

    Version-control directories are skipped unless ``include_vcs``. Stops early once ``stop`` is
    set (a canceled call), marking the walk truncated. Closing the generator closes every
    descriptor it opened.
    """
    top = top_path.rstrip("/") or "/"
    prefix = "" if top == "/" else top
    stack: list[_Frame] = []
    try:
        fd = os.dup(top_fd)
        try:
            stack.append(_Frame(fd, _scandir(fd), prefix, 1))
        except OSError:
            os.close(fd)
            raise
        while stack:
            frame = stack[-1]
            try:
                item = next(frame.entries, None)
            except OSError as exc:
                stats.skip_error(exc)
                item = None
            if item is None:
                _close(stack.pop())
                continue
            if (stop is not None and stop.is_set()) or stats.scanned >= max_entries:
                stats.truncated = True
                return
            stats.scanned += 1
            name = item.name
            path = f"{frame.path}/{name}"
            if not _utf8(name):
                stats.skip(Skip.UNDECODABLE_NAME)
                continue
            if refused_character(name) is not None:
                stats.skip(Skip.REFUSED_NAME)
                continue
            if len(path) * 4 >= MAX_PATH_BYTES and len(path.encode()) >= MAX_PATH_BYTES:
                stats.skip(Skip.PATH_TOO_LONG)
                continue
            kind = _kind(item)
            if kind is Kind.DIR and not include_vcs and name in VCS_DIRECTORIES:
                stats.skip(Skip.VCS_DIRECTORY)
                continue
            yield Entry(path, name, kind, frame.fd, frame.depth, item)
            if kind is not Kind.DIR or not recursive:
                continue
            try:
                sub = roots.open_entry(frame.fd, name, path, os.O_RDONLY | os.O_DIRECTORY)
            except PathError as exc:
                stats.skip_error(exc)
                continue
            if frame.depth >= max_depth:
                # Too deep to enter: the walk is incomplete only if something is in there.
                try:
                    with _scandir(sub) as inner:
                        if next(inner, None) is not None:
                            stats.truncated = True
                except OSError as exc:
                    stats.skip_error(exc)
                finally:
                    os.close(sub)
                continue
            try:
                stack.append(_Frame(sub, _scandir(sub), path, frame.depth + 1))
            except OSError as exc:
                os.close(sub)
                stats.skip_error(exc)
    finally:
        for frame in stack:
            _close(frame)


def _scandir(fd: int) -> os._ScandirIterator[str]:
    # scandir(fd) lists the directory through a duplicate of fd and reports names as str
    # (undecodable bytes as surrogates); DirEntry.stat/is_dir use fstatat(fd, name, NOFOLLOW).
    return os.scandir(fd)


def _close(frame: _Frame) -> None:
    frame.entries.close()
    os.close(frame.fd)


def _kind(item: os.DirEntry[str]) -> Kind:
    try:
        if item.is_symlink():
            return Kind.OTHER
        if item.is_dir(follow_symlinks=False):
            return Kind.DIR
        if item.is_file(follow_symlinks=False):
            return Kind.FILE
    except OSError:
        # Gone between listing and lstat: report what is certain, that it is no file or dir now.
        pass
    return Kind.OTHER


def _utf8(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
