"""What every file change shares: the roots, the limits, the checkpoint store, and their errors.

``Workspace`` opens a change's directory, reads its target, serialises this worker's changes to
one path, and looks up and settles records; ``writing`` (create, replace, edit) and ``recovery``
(preview, restore, settling interrupted changes) build on it. Everything here blocks: it runs in
the tools' threads.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from toolcalls.activities.errors import tool_error
from toolcalls.activities.files import atomic
from toolcalls.activities.files.atomic import FileState
from toolcalls.activities.files.checkpoints import (
    ChangeKind,
    ChangeRecord,
    ChangeState,
    CheckpointError,
    CheckpointStore,
)
from toolcalls.activities.files.paths import PathError, Roots
from toolcalls.activities.files.reading import path_failure
from toolcalls.activities.files.settings import FilesSettings
from toolcalls.workflows.models.call import ErrorCode

log = logging.getLogger(__name__)

CREATED_MODE = 0o600
"""Mode of a file ``create_file`` makes (the spec's)."""


class Conflict(Exception):
    """The entry changed between the last check and the swap."""


class Stopped(Exception):
    """The call was canceled while the new content was written aside: the swap is not made."""


class Workspace:
    """The roots, limits and checkpoint store of one family, and the steps every change shares."""

    def __init__(self, settings: FilesSettings, roots: Roots, store: CheckpointStore) -> None:
        self.settings = settings
        self.roots = roots
        self.store = store
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    @contextmanager
    def parent(self, tool: str, path: str) -> Iterator[tuple[int, str]]:
        """The open directory holding ``path`` and the name in it; refusals name the path."""
        try:
            dir_fd, name = self.roots.open_parent(path)
        except PathError as exc:
            if not exc.missing:
                # A permission or resource failure (EACCES, EMFILE, EIO) is not the model's to fix.
                raise path_failure(tool, exc) from None
            reason = "its directory does not exist (directories are not created)"
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS, f"{tool}: {path}: {reason}", fixable_args=["path"]
            ) from None
        try:
            yield dir_fd, name
        finally:
            os.close(dir_fd)

    def read(self, tool: str, path: str, dir_fd: int, name: str) -> FileState:
        try:
            return atomic.read_state(dir_fd, name, self.settings.max_file_bytes)
        except OSError as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"{tool}: {path}: cannot read: {exc.strerror or exc}"
            ) from None

    @contextmanager
    def locked(self, path: str) -> Iterator[None]:
        """Serialise this worker's changes to one path: check, write and swap as one step."""
        with self._locks_guard:
            lock = self._locks.setdefault(path, threading.Lock())
        with lock:
            yield

    def lookup(self, tool: str, change_id: str) -> ChangeRecord | None:
        try:
            return self.store.get(change_id)
        except CheckpointError as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"{tool}: the checkpoint store failed: {exc}"
            ) from None

    def record(self, tool: str, change_id: str) -> ChangeRecord:
        record = self.lookup(tool, change_id)
        if record is None:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"{tool}: no change {change_id} in the checkpoint store",
                fixable_args=["change_id"],
            )
        return record

    def settle(self, record: ChangeRecord, old: ChangeState, new: ChangeState, detail: str) -> None:
        """Record how an operation ended; if even that fails, the next start settles it."""
        try:
            self.store.transition(record.change_id, old, new, detail=detail, temp_name=None)
        except CheckpointError:
            log.exception("change %s: cannot record %s (%s)", record.change_id, new.value, detail)

    def finish(self, tool: str, record: ChangeRecord, old: ChangeState, new: ChangeState) -> None:
        """Record success; the file has changed, so failing to say so makes the call uncertain."""
        try:
            self.store.transition(record.change_id, old, new, temp_name=None)
        except CheckpointError as exc:
            raise uncertain(
                tool,
                record.path,
                record.change_id,
                f"the file was changed but its record could not be marked {new.value}: {exc}",
            ) from None


def conflict(record: ChangeRecord, parent: str, state: FileState) -> str | None:
    """Why the file no longer holds exactly what the change wrote, or ``None``."""
    if parent != record.parent:
        return "its directory is not the one the change was made in"
    if state.kind == "absent":
        return "the file no longer exists"
    if state.kind == "other":
        return f"the path {state.reason}"
    if state.sha256 != record.postimage_sha256:
        return "the file's content changed after the change"
    if state.mode != record.postimage_mode:
        return f"the file's mode changed after the change (now {octal(state.mode)})"
    return None


def holds_preimage(record: ChangeRecord, state: FileState) -> bool:
    """The file is as it was before the change (absent, for a created file)."""
    if record.kind is ChangeKind.CREATE:
        return not state.exists
    return state.sha256 == record.preimage_sha256 and state.mode == record.preimage_mode


def holds_postimage(record: ChangeRecord, state: FileState) -> bool:
    """The file is exactly what the change wrote."""
    return state.sha256 == record.postimage_sha256 and state.mode == record.postimage_mode


def new_mode(kind: ChangeKind, state: FileState) -> int:
    """The mode a write leaves: ``0600`` for a new file, the old one's otherwise."""
    if kind is ChangeKind.CREATE or state.mode is None:
        return CREATED_MODE
    return state.mode & atomic.KEPT_MODE_BITS


def octal(mode: int | None) -> str | None:
    return f"{mode:04o}" if mode is not None else None


def same_approval(approved: dict[str, Any], **now: Any) -> bool:
    """Whether every key of the current state equals what the approved preview recorded."""
    return all(approved.get(key) == value for key, value in now.items())


def precondition_failed(tool: str, path: str, reason: str) -> Exception:
    return tool_error(
        ErrorCode.PRECONDITION_FAILED, f"{tool}: {path}: {reason}; nothing was changed"
    )


def uncertain(tool: str, path: str, change_id: str, detail: str) -> Exception:
    return tool_error(
        ErrorCode.UNCERTAIN,
        f"{tool}: {path}: {detail}; change {change_id} needs inspecting before anything else",
    )
