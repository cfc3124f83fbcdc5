"""``create_file``, ``replace_file``, ``edit_file``, ``preview_change`` and ``restore_change``.

What they can touch: regular files below the deployment's roots, and the checkpoint store. A path
is opened by ``Roots`` (lexical checks, then the kernel refuses links, escapes and other
filesystems); from then on everything works from the descriptor of the file's directory and one
name in it (``atomic``), never through a path string again. Missing directories are not created.

Every change is recorded in the checkpoint store, with the file's old bytes and mode, before
anything on disk is touched; if the record cannot be saved, nothing is changed. The new content is
written to a temporary file in the same directory and synced, then swapped in by ``rename`` (or,
for a new file, given the name by ``link``, which refuses any entry that appeared meanwhile), then
the directory is synced. Nothing is ever replayed or rolled back automatically (``recovery``).

Approval binds to what was previewed: ``prepare_<tool>`` returns the unified diff, the digest of
the current file, and a precondition (the file's identity, mode, size and digest, its directory's
identity, the new content's digest) that the execute step checks again, refusing with
``precondition_failed`` when anything moved. A final compare right before the rename narrows the
window for other writers; it is not a lock they respect (that takes an OS sandbox).

Filesystem and SQLite work runs in threads while the tool heartbeats from the event loop. A
cancellation that arrives before the new content is swapped in stops the write there: the
temporary file is removed, the record settles ``failed``, and the tool reports that nothing was
changed (``changed: false``; the call ends ``canceled``). One that arrives later cannot stop the
change halfway: it completes, and the cancellation is reported with the change's id, which
``restore_change`` takes to undo it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from toolcalls.activities.base import CallContext, ToolResult
from toolcalls.activities.errors import tool_error
from toolcalls.activities.files import atomic, edits, recovery
from toolcalls.activities.files.atomic import FileState, Progress
from toolcalls.activities.files.changes import (
    Conflict,
    Stopped,
    Workspace,
    new_mode,
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
    CheckpointStore,
)
from toolcalls.activities.files.diffs import unified_diff
from toolcalls.activities.files.edits import Edit
from toolcalls.activities.files.paths import Roots
from toolcalls.activities.files.settings import FilesSettings
from toolcalls.activities.files.write_models import (
    ChangeArgs,
    ChangePreview,
    CreateFileArgs,
    EditFileArgs,
    FileWriteResult,
    ReplaceFileArgs,
    RestoreResult,
    change_id_for,
)
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode

T = TypeVar("T")


class FileWriteTools:
    """Writes and their recovery below the roots; every change is recorded before it is made.

    Trust model: paths, content and change ids come from the model; the roots, the limits and the
    checkpoint store from the deployment. Built at worker start, it first settles the records a
    previous worker left unfinished (``recovery.recover``).
    """

    def __init__(self, settings: FilesSettings, roots: Roots, store: CheckpointStore) -> None:
        self.space = Workspace(settings, roots, store)
        self.recovered: list[ChangeRecord] = recovery.recover(self.space)
        """The records found unfinished at start, as they were settled."""

    async def prepare_create_file(self, args: CreateFileArgs, call: CallContext) -> Prepared:
        return await self._prepare(args.path, edits.creation(self._content(args)))

    async def create_file(self, args: CreateFileArgs, call: CallContext) -> FileWriteResult:
        return await self._write(args.path, edits.creation(self._content(args)), call)

    async def prepare_replace_file(self, args: ReplaceFileArgs, call: CallContext) -> Prepared:
        return await self._prepare(args.path, edits.replacement(self._content(args)))

    async def replace_file(self, args: ReplaceFileArgs, call: CallContext) -> FileWriteResult:
        return await self._write(args.path, edits.replacement(self._content(args)), call)

    async def prepare_edit_file(self, args: EditFileArgs, call: CallContext) -> Prepared:
        return await self._prepare(args.path, self._text_edit(args))

    async def edit_file(self, args: EditFileArgs, call: CallContext) -> FileWriteResult:
        return await self._write(args.path, self._text_edit(args), call)

    async def preview_change(self, args: ChangeArgs, call: CallContext) -> ChangePreview:
        return await self._in_thread(
            "preview_change", args.change_id, lambda _: recovery.preview(self.space, args.change_id)
        )

    async def prepare_restore_change(self, args: ChangeArgs, call: CallContext) -> Prepared:
        return await self._in_thread(
            "restore_change",
            args.change_id,
            lambda _: recovery.prepare_restore(self.space, args.change_id),
        )

    async def restore_change(self, args: ChangeArgs, call: CallContext) -> RestoreResult:
        return await self._in_thread(
            "restore_change",
            args.change_id,
            lambda _: recovery.restore(self.space, args.change_id, call),
            completes=True,
        )

    def _limit(self) -> int:
        settings = self.space.settings
        return min(settings.max_write_bytes, settings.max_file_bytes)

    def _content(self, args: CreateFileArgs | ReplaceFileArgs) -> bytes:
        tool = "create_file" if isinstance(args, CreateFileArgs) else "replace_file"
        return edits.encoded(tool, "content", args.content, self._limit(), ["content"])

    def _text_edit(self, args: EditFileArgs) -> Edit:
        both = args.old_text + args.new_text
        what = "old_text and new_text together"
        edits.encoded("edit_file", what, both, self._limit(), ["old_text", "new_text"])
        return edits.text_edit(args)

    async def _prepare(self, path: str, edit: Edit) -> Prepared:
        return await self._in_thread(edit.tool, path, lambda _: self._prepare_sync(path, edit))

    async def _write(self, path: str, edit: Edit, call: CallContext) -> FileWriteResult:
        return await self._in_thread(
            edit.tool,
            path,
            lambda progress: self._write_sync(path, edit, call, progress),
            completes=True,
        )

    def _prepare_sync(self, path: str, edit: Edit) -> Prepared:
        space = self.space
        with space.parent(edit.tool, path) as (dir_fd, name):
            parent = atomic.directory_id(dir_fd)
            state = space.read(edit.tool, path, dir_fd, name)
        data, replacements = edit.compute(path, state, space.settings.max_file_bytes)
        diff = unified_diff(path, state.data, data)
        digest = atomic.sha256(data)
        artifact = PreviewArtifact(
            kind="diff",
            title=f"{edit.tool} {path}",
            text=diff.text,
            data={
                "path": path,
                "preimage_sha256": state.sha256,
                "preimage_size": state.size,
                "preimage_mode": octal(state.mode),
                "postimage_sha256": digest,
                "postimage_size": len(data),
                "mode": octal(new_mode(edit.kind, state)),
                "replacements": replacements,
                "diff_truncated": diff.truncated,
                "binary": diff.binary,
            },
        )
        precondition = {
            "path": path,
            "parent": parent,
            "target": state.fingerprint(),
            "postimage_sha256": digest,
        }
        return Prepared(preview=[artifact], precondition=precondition)

    def _write_sync(
        self, path: str, edit: Edit, call: CallContext, progress: Progress
    ) -> FileWriteResult:
        space, tool = self.space, edit.tool
        with space.locked(path), space.parent(tool, path) as (dir_fd, name):
            parent = atomic.directory_id(dir_fd)
            state = space.read(tool, path, dir_fd, name)
            approved = call.precondition
            if approved is not None:
                _check_approved(tool, path, approved, parent, state)
            data, replacements = edit.compute(path, state, space.settings.max_file_bytes)
            digest = atomic.sha256(data)
            if approved is not None and not same_approval(approved, postimage_sha256=digest):
                raise precondition_failed(tool, path, "the new content differs from the preview")
            change_id = change_id_for(call.idempotency_key)
            earlier = space.lookup(tool, change_id)
            if earlier is not None:
                raise precondition_failed(
                    tool,
                    path,
                    f"this call already ran as change {change_id}, now {earlier.state.value} "
                    "(preview_change shows it)",
                )
            mode = new_mode(edit.kind, state)
            record = ChangeRecord(
                change_id=change_id,
                tool=tool,
                kind=edit.kind,
                path=path,
                parent=parent,
                state=ChangeState.PREPARED,
                preimage=state.data,
                preimage_mode=state.mode,
                preimage_sha256=state.sha256,
                postimage_sha256=digest,
                postimage_mode=mode,
                postimage_size=len(data),
                temp_name=atomic.temp_name(),
                workflow_id=call.workflow_id,
                call_id=call.call_id,
                idempotency_key=call.idempotency_key,
            )
            self._commit(record, dir_fd, name, data, state, progress)
        return FileWriteResult(
            change_id=change_id,
            path=path,
            kind=edit.kind,
            state=ChangeState.APPLIED,
            size=len(data),
            sha256=digest,
            mode=f"{mode:04o}",
            replacements=replacements,
        )

    def _commit(
        self,
        record: ChangeRecord,
        dir_fd: int,
        name: str,
        data: bytes,
        before: FileState,
        progress: Progress,
    ) -> None:
        """Save the record, then make the change; every way out leaves the record settled."""
        space, tool, path, temp = self.space, record.tool, record.path, record.temp_name
        assert temp is not None
        try:
            space.store.begin(record)
        except CheckpointError as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"{tool}: {path}: the recovery record could not be saved, so nothing was "
                f"changed: {exc}",
                retryable=True,
            ) from None
        try:
            atomic.write_temp(dir_fd, temp, data, record.postimage_mode, progress)
            if record.kind is ChangeKind.CREATE:
                try:
                    atomic.link_new(dir_fd, temp, name)
                except FileExistsError:
                    raise Conflict from None
            else:
                if not atomic.same_entry(before.info, atomic.entry_stat(dir_fd, name)):
                    raise Conflict
                atomic.swap_in(dir_fd, temp, name)
        except Stopped:  # the temporary file is gone (write_temp removes it)
            reason = "canceled before the new content was in place"
            space.settle(record, ChangeState.PREPARED, ChangeState.FAILED, reason)
            raise tool_error(
                ErrorCode.CANCELED,
                f"{tool}: {path}: {reason}; nothing was changed",
                output={"changed": False, "change_id": record.change_id, "state": "failed"},
            ) from None
        except Conflict:
            atomic.discard(dir_fd, temp)
            what = "created" if record.kind is ChangeKind.CREATE else "changed"
            space.settle(record, ChangeState.PREPARED, ChangeState.FAILED, f"{what} meanwhile")
            raise precondition_failed(
                tool, path, f"was {what} by someone else while the new content was written"
            ) from None
        except OSError as exc:
            atomic.discard(dir_fd, temp)
            reason = f"cannot write: {exc.strerror or exc}"
            space.settle(record, ChangeState.PREPARED, ChangeState.FAILED, reason)
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"{tool}: {path}: {reason}; nothing was changed"
            ) from None
        # The new content is in place from here on.
        try:
            if record.kind is ChangeKind.CREATE:
                atomic.remove(dir_fd, temp)
            atomic.sync_dir(dir_fd)
        except OSError as exc:
            detail = f"the new content is in place but may not be durable: {exc.strerror or exc}"
            space.settle(record, ChangeState.PREPARED, ChangeState.UNCERTAIN, detail)
            raise uncertain(tool, path, record.change_id, detail) from None
        space.finish(tool, record, ChangeState.PREPARED, ChangeState.APPLIED)

    async def _in_thread(
        self, tool: str, subject: str, work: Callable[[Progress], T], *, completes: bool = False
    ) -> T:
        """Run blocking ``work`` in a thread while heartbeating its progress.

        With ``completes``, a cancellation tells ``work`` to stop at its next progress report
        (a write still writing aside stops there and says nothing changed), waits for it, and
        reports a change that completed anyway with its outcome.
        """
        async with Heartbeat(tool=tool, subject=subject, written=0) as beat:
            stop = threading.Event()

            def progress(written: int) -> None:
                beat.update(written=written)
                if stop.is_set():
                    raise Stopped

            task = asyncio.ensure_future(asyncio.to_thread(work, progress))
            if not completes:
                return await task
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                stop.set()
                result = await task
                raise completed_anyway(tool, subject, result) from None


def completed_anyway(tool: str, subject: str, result: object) -> Exception:
    """The error of a change canceled too late to stop: its outcome, and how to undo a write."""
    message = f"{tool}: {subject}: canceled after the change started; it completed anyway"
    output: Any = None
    if isinstance(result, ToolResult):
        output = result.model_dump(mode="json")
    if isinstance(result, FileWriteResult | RestoreResult):
        message += f" as change {result.change_id} ({result.state.value})"
    if isinstance(result, FileWriteResult):
        message += "; restore_change with that change_id undoes it"
    return tool_error(ErrorCode.CANCELED, message, output=output)


def _check_approved(
    tool: str, path: str, approved: dict[str, Any], parent: str, state: FileState
) -> None:
    """Refuse unless the file and its directory are still what the approved preview showed."""
    if approved.get("path") != path:
        raise precondition_failed(tool, path, "the approval was for another path")
    if approved.get("parent") != parent:
        raise precondition_failed(tool, path, "its directory was replaced since the preview")
    expected = approved.get("target")
    if expected is None and state.exists:
        raise precondition_failed(tool, path, "was created since the preview")
    if expected is not None and expected != state.fingerprint():
        what = "changed" if state.exists else "was removed"
        raise precondition_failed(tool, path, f"{what} since the preview")
