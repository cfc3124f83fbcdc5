"""Inspecting and restoring recorded changes, and settling the ones a dead worker left behind.

``preview`` (``preview_change``) compares the file as it is now with what the change wrote and
what restoring would leave. ``restore`` (``restore_change``) requires an ``applied`` change whose
file still holds exactly what the change wrote, in the same directory; it writes the saved bytes
and mode back (through a temporary file and a rename, which replaces a symlink at the name as an
entry, never following it) or removes a file the change created. A path that became a symlink,
or any other difference, is a conflict: reported, never resolved by guessing. ``recover`` runs at
worker start. Everything here blocks: it runs in the tools' threads.
"""

from __future__ import annotations

import logging
import os
from typing import Literal

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.files import atomic
from toolcalls.activities.files.atomic import FileState
from toolcalls.activities.files.changes import (
    Conflict,
    Workspace,
    conflict,
    holds_postimage,
    holds_preimage,
    octal,
    precondition_failed,
    same_approval,
    uncertain,
)
from toolcalls.activities.files.checkpoints import (
    ChangeKind,
    ChangeRecord,
    ChangeState,
    CheckpointError,
)
from toolcalls.activities.files.diffs import unified_diff
from toolcalls.activities.files.paths import PathError
from toolcalls.activities.files.write_models import ChangePreview, RestoreResult
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode

log = logging.getLogger(__name__)

UNCERTAIN_STATES = frozenset({ChangeState.PREPARED, ChangeState.RESTORING, ChangeState.UNCERTAIN})
"""States in which whether the change (or its restore) happened is not known."""


def preview(space: Workspace, change_id: str) -> ChangePreview:
    record = space.record("preview_change", change_id)
    _, state, reason = _inspect(space, "preview_change", record)
    if state is None or state.kind == "other" or (state.kind == "file" and state.data is None):
        # Nothing readable to diff against; the conflict reason says what is there.
        text, truncated = "", False
    else:
        diff = unified_diff(record.path, state.data, record.preimage)
        text, truncated = diff.text, diff.truncated
    return ChangePreview(
        change_id=record.change_id,
        path=record.path,
        tool=record.tool,
        kind=record.kind,
        state=record.state,
        uncertain=record.state in UNCERTAIN_STATES,
        conflict=reason is not None,
        conflict_reason=reason,
        restorable=record.state is ChangeState.APPLIED and reason is None,
        restore_action=_action(record),
        diff=text,
        diff_truncated=truncated,
        current_sha256=state.sha256 if state is not None else None,
        detail=record.detail,
        created_at=record.created_at,
        updated_at=record.updated_at,
        workflow_id=record.workflow_id,
        call_id=record.call_id,
    )


def prepare_restore(space: Workspace, change_id: str) -> Prepared:
    """The restoration diff to approve; a change that cannot be restored fails here, unasked."""
    record = space.record("restore_change", change_id)
    _check_restorable(record)
    parent, state, reason = _inspect(space, "restore_change", record)
    if reason is not None or state is None:
        raise _restore_conflict(record, reason or "the file cannot be inspected")
    diff = unified_diff(record.path, state.data, record.preimage)
    artifact = PreviewArtifact(
        kind="diff",
        title=f"restore_change {record.path}",
        text=diff.text,
        data={
            "change_id": record.change_id,
            "path": record.path,
            "action": _action(record),
            "current_sha256": state.sha256,
            "restored_sha256": record.preimage_sha256,
            "restored_mode": octal(_restored_mode(record)),
            "diff_truncated": diff.truncated,
            "binary": diff.binary,
        },
    )
    precondition = {"change_id": record.change_id, "parent": parent, "target": state.fingerprint()}
    return Prepared(preview=[artifact], precondition=precondition)


def restore(space: Workspace, change_id: str, call: CallContext) -> RestoreResult:
    tool = "restore_change"
    path = space.record(tool, change_id).path
    with space.locked(path):
        record = space.record(tool, change_id)
        _check_restorable(record)
        try:
            dir_fd, name = space.roots.open_parent(path)
        except PathError as exc:
            raise _restore_conflict(record, f"the path cannot be opened: {exc.reason}") from None
        try:
            _restore_at(space, record, dir_fd, name, call)
        finally:
            os.close(dir_fd)
    return RestoreResult(
        change_id=record.change_id,
        path=path,
        state=ChangeState.RESTORED,
        action=_action(record),
        size=len(record.preimage) if record.preimage is not None else None,
        sha256=record.preimage_sha256,
        mode=octal(_restored_mode(record)),
    )


def _restore_at(
    space: Workspace, record: ChangeRecord, dir_fd: int, name: str, call: CallContext
) -> None:
    tool, path = "restore_change", record.path
    parent = atomic.directory_id(dir_fd)
    state = space.read(tool, path, dir_fd, name)
    reason = conflict(record, parent, state)
    if reason is not None:
        raise _restore_conflict(record, reason)
    approved = call.precondition
    if approved is not None and not same_approval(
        approved, change_id=record.change_id, parent=parent, target=state.fingerprint()
    ):
        raise precondition_failed(tool, path, "changed since the restore was previewed")
    temp = atomic.temp_name() if record.kind is ChangeKind.REPLACE else None
    try:
        space.store.transition(
            record.change_id,
            ChangeState.APPLIED,
            ChangeState.RESTORING,
            temp_name=temp,
            restore_key=call.idempotency_key,
        )
    except CheckpointError as exc:
        raise tool_error(
            ErrorCode.EXECUTION_FAILED,
            f"{tool}: {path}: the restore could not be recorded, so nothing was changed: {exc}",
            retryable=True,
        ) from None
    try:
        if temp is not None:
            assert record.preimage is not None
            atomic.write_temp(dir_fd, temp, record.preimage, _restored_mode(record) or 0)
        if not atomic.same_entry(state.info, atomic.entry_stat(dir_fd, name)):
            raise Conflict
        if temp is not None:
            atomic.swap_in(dir_fd, temp, name)
        else:
            atomic.remove(dir_fd, name)
    except (Conflict, OSError) as exc:
        # Certainly nothing happened: the change stays applied and can be restored later.
        if temp is not None:
            atomic.discard(dir_fd, temp)
        if isinstance(exc, OSError):
            code, reason = ErrorCode.EXECUTION_FAILED, f"restore failed: {exc.strerror or exc}"
        else:
            code, reason = ErrorCode.PRECONDITION_FAILED, "the file changed during the restore"
        space.settle(record, ChangeState.RESTORING, ChangeState.APPLIED, reason)
        raise tool_error(code, f"{tool}: {path}: {reason}; nothing was restored") from None
    try:
        atomic.sync_dir(dir_fd)
    except OSError as exc:
        detail = f"restored, but maybe not durably: {exc.strerror or exc}"
        space.settle(record, ChangeState.RESTORING, ChangeState.UNCERTAIN, detail)
        raise uncertain(tool, path, record.change_id, detail) from None
    space.finish(tool, record, ChangeState.RESTORING, ChangeState.RESTORED)


def recover(space: Workspace) -> list[ChangeRecord]:
    """Settle the records a previous worker left ``prepared`` or ``restoring``.

    Its temporary file is removed. If the file is exactly as it was before the interrupted
    operation, that operation certainly did not happen (the swap is its only commit point, and
    the temporary file is gone now): a write becomes ``failed``, a restore goes back to
    ``applied``. Otherwise the record becomes ``uncertain``: whether the effect happened is for
    a person to judge; nothing is replayed or undone here.
    """
    settled = []
    for record in space.store.unfinished():
        new, detail = _interrupted(space, record)
        space.store.transition(record.change_id, record.state, new, detail=detail, temp_name=None)
        log.warning(
            "change %s (%s) was interrupted; now %s: %s",
            record.change_id,
            record.path,
            new.value,
            detail,
        )
        settled.append(space.store.get(record.change_id) or record)
    return settled


def _interrupted(space: Workspace, record: ChangeRecord) -> tuple[ChangeState, str]:
    what = "write" if record.state is ChangeState.PREPARED else "restore"
    try:
        dir_fd, name = space.roots.open_parent(record.path)
    except PathError as exc:
        return ChangeState.UNCERTAIN, f"{what} interrupted; cannot inspect: {exc.reason}"
    try:
        if atomic.directory_id(dir_fd) != record.parent:
            # The temporary file, if any, is in a directory no longer at this path: leave it.
            return (
                ChangeState.UNCERTAIN,
                f"{what} interrupted; the directory is no longer the one it was made in",
            )
        if record.temp_name:
            atomic.discard(dir_fd, record.temp_name)
        state = atomic.read_state(dir_fd, name, space.settings.max_file_bytes)
    except OSError as exc:
        return ChangeState.UNCERTAIN, f"{what} interrupted; cannot inspect: {exc.strerror}"
    finally:
        os.close(dir_fd)
    if record.state is ChangeState.PREPARED:
        if holds_preimage(record, state):
            return ChangeState.FAILED, "write interrupted before the file was changed"
        return (
            ChangeState.UNCERTAIN,
            f"write interrupted; the file now holds {_seen(record, state)}",
        )
    if holds_postimage(record, state):
        return ChangeState.APPLIED, "restore interrupted before the file was changed"
    return ChangeState.UNCERTAIN, f"restore interrupted; the file now holds {_seen(record, state)}"


def _seen(record: ChangeRecord, state: FileState) -> str:
    if holds_postimage(record, state):
        return "what the change wrote"
    if holds_preimage(record, state):
        return "what it held before the change"
    return "something else"


def _inspect(
    space: Workspace, tool: str, record: ChangeRecord
) -> tuple[str | None, FileState | None, str | None]:
    """The directory's identity, the file's state, and why a restore would conflict."""
    try:
        dir_fd, name = space.roots.open_parent(record.path)
    except PathError as exc:
        return None, None, f"the path cannot be opened: {exc.reason}"
    try:
        parent = atomic.directory_id(dir_fd)
        state = space.read(tool, record.path, dir_fd, name)
    finally:
        os.close(dir_fd)
    return parent, state, conflict(record, parent, state)


def _check_restorable(record: ChangeRecord) -> None:
    if record.state is not ChangeState.APPLIED:
        raise precondition_failed(
            "restore_change",
            record.path,
            f"change {record.change_id} is {record.state.value}; only an applied change can be "
            "restored",
        )


def _restored_mode(record: ChangeRecord) -> int | None:
    if record.preimage_mode is None:
        return None
    return record.preimage_mode & atomic.KEPT_MODE_BITS


def _action(record: ChangeRecord) -> Literal["rewrite", "remove"]:
    return "remove" if record.kind is ChangeKind.CREATE else "rewrite"


def _restore_conflict(record: ChangeRecord, reason: str) -> Exception:
    return tool_error(
        ErrorCode.PRECONDITION_FAILED,
        f"restore_change: {record.path}: conflict: {reason}; nothing was restored "
        "(preview_change shows the difference)",
    )
