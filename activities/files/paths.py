"""Opening paths inside configured roots without following links, by the kernel, not by strings.

A path must be absolute, inside one of the roots, free of NUL, ``.`` and ``..`` components and of
the characters ``names`` refuses (controls, invisible format characters, backslashes), and within
the kernel's length limits; those checks are lexical and come first. The open itself is
``openat2(root_fd, relative, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
RESOLVE_NO_XDEV)``: the kernel refuses any symlink on the way (``ELOOP``) and any escape from the
root (``EXDEV``), atomically, so a directory swapped for a link mid-walk cannot redirect it. Where
``openat2`` is missing the fallback walks the components from the root's descriptor with
``O_NOFOLLOW | O_DIRECTORY``, which is race-free in the same way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolcalls.activities.files.names import refused_character, shown, unportable_new_name

MAX_PATH_BYTES = 4_096
MAX_NAME_BYTES = 255

_SYS_OPENAT2 = 437  # the same number on x86_64 and aarch64
_RESOLVE_NO_XDEV = 0x01
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS | _RESOLVE_NO_XDEV


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class PathError(ValueError):
    """A path the tools refuse, or that cannot be opened; the message names the path and why."""

    def __init__(
        self, path: str, reason: str, *, missing: bool = False, errno: int | None = None
    ) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.missing = missing
        self.errno = errno
        """The ``OSError`` errno behind a failed open; ``None`` for a lexical refusal."""


@dataclass(frozen=True)
class Located:
    """A path split into its root and the part below it (``""`` for the root itself)."""

    path: str
    root: Root
    relative: str

    @property
    def parent(self) -> str:
        return self.relative.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.relative.rpartition("/")[2]


@dataclass(frozen=True)
class Root:
    """One configured root: its canonical path and a descriptor held for the worker's life."""

    path: str
    fd: int


class Roots:
    """The directories a tool family may touch, and the one way to open anything below them."""

    def __init__(self, roots: Sequence[Path]) -> None:
        if not roots:
            raise ValueError("at least one root is needed")
        self.roots: list[Root] = []
        for root in roots:
            if not root.is_absolute():
                raise ValueError(f"root {root} is not absolute")
            # Aliases such as /tmp -> /private/tmp are resolved once, here, by the deployment.
            canonical = os.path.realpath(root)
            refused = refused_character(canonical)
            if refused is not None:
                raise ValueError(f"root {shown(canonical)} {refused}")
            if not os.path.isdir(canonical):
                raise ValueError(f"root {root} is not a directory")
            fd = os.open(canonical, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            self.roots.append(Root(canonical, fd))
        self._openat2 = _openat2_available(self.roots[0].fd)

    def locate(self, path: str) -> Located:
        """Check ``path`` lexically and find its root."""
        check_path(path)
        for root in sorted(self.roots, key=lambda r: len(r.path), reverse=True):
            if path == root.path or path == root.path + "/":
                return Located(path, root, "")
            if path.startswith(root.path.rstrip("/") + "/"):
                return Located(path, root, path[len(root.path.rstrip("/")) + 1 :])
        raise PathError(path, "not inside a configured root")

    def open(self, path: str | Located, flags: int = os.O_RDONLY, mode: int = 0) -> int:
        """A descriptor for ``path`` opened with ``flags``, never through a link."""
        located = self.locate(path) if isinstance(path, str) else path
        return self._open_at(located, located.relative or ".", flags, mode)

    def open_parent(self, path: str | Located) -> tuple[int, str]:
        """A descriptor for the directory holding ``path``, and the entry's name in it."""
        located = self.locate(path) if isinstance(path, str) else path
        if not located.relative:
            raise PathError(located.path, "is a root, not an entry in one")
        if not located.name:
            raise PathError(located.path, "ends with a slash; name an entry, not a directory")
        fd = self._open_at(located, located.parent or ".", os.O_RDONLY | os.O_DIRECTORY)
        return fd, located.name

    def _open_at(self, located: Located, relative: str, flags: int, mode: int = 0) -> int:
        # O_NONBLOCK: opening a FIFO or a terminal must not block; the callers then refuse
        # anything that is not a regular file or directory. It changes nothing for those.
        flags |= os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            if self._openat2:
                return _openat2(located.root.fd, relative, flags, mode)
            return _walk(located.root.fd, relative, flags, mode)
        except OSError as exc:
            raise _path_error(located.path, exc) from None

    def open_entry(self, dir_fd: int, name: str, path: str, flags: int = os.O_RDONLY) -> int:
        """A descriptor for the entry ``name`` of the directory ``dir_fd``, never through a link.

        For walking a tree from a descriptor this module opened: ``name`` is one component, as
        ``os.scandir`` reports it, and ``path`` is only what errors call it. The same rules apply as
        for ``open``: no symlink, no other filesystem, no blocking on a FIFO.
        """
        if not name or name in (".", "..") or "/" in name or "\x00" in name:
            raise PathError(path, "is not a single directory entry")
        refused = refused_character(name)
        if refused is not None:
            raise PathError(shown(path), refused)
        flags |= os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            if self._openat2:
                return _openat2(dir_fd, name, flags, 0)
            fd = os.open(name, flags, dir_fd=dir_fd)
            try:
                _same_device(dir_fd, fd)
            except OSError:
                os.close(fd)
                raise
            return fd
        except OSError as exc:
            raise _path_error(path, exc) from None

    def close(self) -> None:
        for root in self.roots:
            os.close(root.fd)


def check_path(path: str) -> None:
    """The lexical checks ``Roots.locate`` makes before looking for a root.

    Raises:
        PathError: ``path`` has a NUL or another character ``names`` refuses (the message shows
            the path escaped), is relative, is not UTF-8 text, has an empty, ``.`` or ``..``
            component, or is longer than the kernel accepts.
    """
    if "\x00" in path:
        raise PathError(repr(path), "contains a NUL byte")
    refused = refused_character(path)
    if refused is not None:
        raise PathError(shown(path), refused)
    if not path.startswith("/"):
        raise PathError(path, "not absolute")
    try:
        # surrogateescape: names that are not UTF-8 arrive as lone surrogates from os.fsdecode;
        # any other lone surrogate (possible from Python, never from JSON) names no file.
        encoded = path.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        raise PathError(ascii(path), "cannot be encoded as a file name") from None
    if len(encoded) >= MAX_PATH_BYTES:
        raise PathError(path[:64] + "...", f"longer than {MAX_PATH_BYTES - 1} bytes")
    parts = path.split("/")[1:]
    for part in parts[:-1] if parts and parts[-1] == "" else parts:
        if part in ("", ".", ".."):
            raise PathError(path, f"has a {part or 'empty'!r} component")
        if len(part.encode("utf-8", errors="surrogateescape")) > MAX_NAME_BYTES:
            raise PathError(path, f"has a component longer than {MAX_NAME_BYTES} bytes")


def lexical_path(value: str) -> str:
    """A pydantic validator: ``value`` if ``check_path`` accepts it, else ``ValueError``."""
    try:
        check_path(value)
    except PathError as exc:
        raise ValueError(exc.reason) from None
    return value


def check_new_name(path: str) -> None:
    """The further rule for the name a tool creates, the last component of ``path``.

    Raises:
        PathError: the name could not be held as it is on Windows or macOS (``names``).
    """
    unportable = unportable_new_name(path.rpartition("/")[2])
    if unportable is not None:
        raise PathError(path, unportable)


def regular_file(fd: int, path: str) -> os.stat_result:
    """``fstat`` of ``fd``, refusing anything but a regular file."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise PathError(path, kind)
    return info


def _path_error(path: str, exc: OSError) -> PathError:
    reasons = {
        errno.ELOOP: "is or passes through a symbolic link",
        errno.EXDEV: "leaves its root or crosses into another filesystem",
        errno.ENOENT: "does not exist",
        errno.ENOTDIR: "a component is not a directory",
        errno.EISDIR: "is a directory",
        errno.ENAMETOOLONG: "name too long",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EEXIST: "already exists",
        errno.ENXIO: "is a special file",
    }
    reason = reasons.get(exc.errno or 0, os.strerror(exc.errno or 0).lower())
    return PathError(path, reason, missing=exc.errno == errno.ENOENT, errno=exc.errno)


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def _openat2(dirfd: int, relative: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags=flags, mode=mode, resolve=_RESOLVE)
    name = os.fsencode(relative)
    fd = _syscall(
        _SYS_OPENAT2,
        ctypes.c_int(dirfd),
        ctypes.c_char_p(name),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(fd)


def _openat2_available(dirfd: int) -> bool:
    try:
        os.close(_openat2(dirfd, ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, 0))
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
            return False
        raise
    return True


def _walk(rootfd: int, relative: str, flags: int, mode: int) -> int:
    """The portable fallback: one ``openat`` per component, none of them following a link.

    Each step is checked to stay on the root's filesystem, as ``RESOLVE_NO_XDEV`` would.
    """
    parts = [p for p in relative.split("/") if p and p != "."]
    if ".." in parts:
        # locate() refuses these; this keeps the walk beneath the root like RESOLVE_BENEATH.
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
    trailing_slash = relative.endswith("/")
    current = os.dup(rootfd)
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if last and not trailing_slash:
                fd = os.open(part, flags, mode, dir_fd=current)
                try:
                    _same_device(rootfd, fd)
                except OSError:
                    os.close(fd)
                    raise
                return fd
            step = _open_directory(current, part)
            os.close(current)
            current = step
            _same_device(rootfd, current)
        if trailing_slash or not parts:
            return os.open(".", flags, mode, dir_fd=current)
        raise AssertionError("unreachable")
    finally:
        os.close(current)


def _open_directory(dir_fd: int, name: str) -> int:
    """``name`` in ``dir_fd`` as a directory; ``ELOOP`` for a symlink, as ``openat2`` reports it."""
    try:
        return os.open(
            name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except NotADirectoryError:
        # O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR; say what it was.
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
        raise


def _same_device(anchor_fd: int, fd: int) -> None:
    """``EXDEV`` if ``fd`` is on another filesystem than ``anchor_fd`` (a mount point)."""
    if os.fstat(fd).st_dev != os.fstat(anchor_fd).st_dev:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
