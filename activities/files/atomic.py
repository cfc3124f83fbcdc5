"""Descriptor-relative file primitives for atomic writes: read, write aside, swap in, sync.

Every function takes the descriptor of the directory holding the entry (from
``Roots.open_parent``) and a single name in it, so nothing here resolves a path: a directory
renamed or swapped for a link after it was opened cannot redirect a write. The final component is
opened with ``O_NOFOLLOW``, so a symlink at the name is refused when read and replaced as an entry
(never followed) when renamed over.

A write goes through a temporary file in the same directory, created with ``O_EXCL`` and mode
``0600``, written, given its final mode and ``fsync``-ed; then ``rename`` swaps it in (replace)
or ``link`` gives it the name, failing with ``EEXIST`` if anything has it (create); then the
directory is ``fsync``-ed. A reader sees the old file or the new one, never a part of either.
Every function blocks: call them from a thread.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass

WRITE_CHUNK = 262_144
"""Bytes per ``write`` call; progress is reported after each."""
TEMP_PREFIX = ".toolcalls-"
TEMP_SUFFIX = ".tmp"
KEPT_MODE_BITS = 0o1777
"""Mode bits a write keeps. setuid and setgid are dropped: the new file belongs to the worker's
user, not the original owner, and must not run as the worker with content a model wrote."""

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

Progress = Callable[[int], None]


@dataclass(frozen=True)
class FileState:
    """What one name in a directory holds right now.

    ``kind`` is ``absent``, ``file`` (a regular file, with its bytes unless it is over the size
    limit) or ``other`` (a symlink, a directory, a special file; ``reason`` says which).
    """

    kind: str
    reason: str | None = None
    data: bytes | None = None
    info: os.stat_result | None = None
    sha256: str | None = None

    @property
    def exists(self) -> bool:
        return self.kind != "absent"

    @property
    def mode(self) -> int | None:
        return stat.S_IMODE(self.info.st_mode) if self.info is not None else None

    @property
    def size(self) -> int | None:
        return self.info.st_size if self.info is not None else None

    def fingerprint(self) -> dict[str, object] | None:
        """Identity, mode, size and digest: what an approval is bound to (JSON-ready)."""
        if self.kind != "file" or self.info is None:
            return None
        return {
            "dev": self.info.st_dev,
            "ino": self.info.st_ino,
            "mode": self.mode,
            "size": self.size,
            "sha256": self.sha256,
        }


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def directory_id(dir_fd: int) -> str:
    """``"<st_dev>:<st_ino>"`` of an open directory: identity, not path."""
    info = os.fstat(dir_fd)
    return f"{info.st_dev}:{info.st_ino}"


def read_state(dir_fd: int, name: str, max_bytes: int) -> FileState:
    """Open ``name`` without following a link and read it whole if it is a regular file.

    A file over ``max_bytes`` is ``file`` with ``data`` ``None``. Errors other than "not there",
    "a link" and "not a regular file" propagate as ``OSError``.
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return FileState("absent")
        if exc.errno == errno.ELOOP:
            return FileState("other", "is a symbolic link")
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):
            return FileState("other", "is a special file")
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return FileState("other", "is a directory", info=info)
        if not stat.S_ISREG(info.st_mode):
            return FileState("other", "is not a regular file", info=info)
        if info.st_size > max_bytes:
            return FileState("file", info=info)
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            # It grew while being read.
            return FileState("file", info=os.fstat(fd))
        return FileState("file", data=data, info=info, sha256=sha256(data))
    finally:
        os.close(fd)


def entry_stat(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of the entry, or ``None`` if there is none."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def same_entry(before: os.stat_result | None, now: os.stat_result | None) -> bool:
    """Whether an entry is untouched: same inode, mode, size, and modification and change times.

    Any write or ``chmod`` moves ``ctime``, so this is the cheap final check right before a
    rename; the digest bound to an approval is checked before the write starts.
    """
    if before is None or now is None:
        return before is None and now is None
    fields = ("st_dev", "st_ino", "st_mode", "st_size", "st_mtime_ns", "st_ctime_ns")
    return all(getattr(before, f) == getattr(now, f) for f in fields)


def temp_name() -> str:
    """A fresh name for a temporary file; short, so any target name leaves room for it."""
    return f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"


def write_all(fd: int, data: bytes, progress: Progress | None = None) -> None:
    """Write every byte of ``data``, reporting the total written after each chunk."""
    view = memoryview(data)
    written = 0
    while written < len(view):
        written += os.write(fd, view[written : written + WRITE_CHUNK])
        if progress is not None:
            progress(written)


def write_temp(
    dir_fd: int, name: str, data: bytes, mode: int, progress: Progress | None = None
) -> None:
    """Create ``name`` exclusively, write ``data``, set ``mode`` and ``fsync``; or remove it."""
    fd = os.open(
        name,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=dir_fd,
    )
    try:
        try:
            write_all(fd, data, progress)
            # Explicit, so the umask has no say in the result.
            os.fchmod(fd, mode & KEPT_MODE_BITS)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        discard(dir_fd, name)
        raise


def swap_in(dir_fd: int, temp: str, name: str) -> None:
    """Atomically make ``temp`` the file called ``name``, whatever entry had the name."""
    os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def link_new(dir_fd: int, temp: str, name: str) -> None:
    """Give ``temp``'s file the name ``name``; ``FileExistsError`` if any entry has it.

    ``link`` never follows or replaces the destination, so a file, directory or (even dangling)
    symlink created at the name by anyone, at any moment, makes this fail rather than be replaced.
    """
    os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)


def remove(dir_fd: int, name: str) -> None:
    os.unlink(name, dir_fd=dir_fd)


def discard(dir_fd: int, name: str) -> bool:
    """Remove ``name`` if it is there; whether it was."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def sync_dir(dir_fd: int) -> None:
    """Make the directory's entries (a rename, a link, an unlink) durable."""
    os.fsync(dir_fd)
