"""The file family: reads, recoverable writes and their recovery (``[files]``).

Reads and writes share one set of root descriptors; writes exist only with a checkpoint store.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from pydantic import Field

from toolcalls.activities.family import Deployment, Family, FamilySettings, Resources, needs
from toolcalls.activities.files.checkpoints import CheckpointError, CheckpointStore
from toolcalls.activities.files.paths import Roots
from toolcalls.activities.files.read_models import (
    ListFilesArgs,
    ListFilesResult,
    ReadFileArgs,
    ReadFileResult,
    SearchFilesArgs,
    SearchFilesResult,
)
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.activities.files.settings import FilesSettings, roots_problems
from toolcalls.activities.files.write_models import (
    ChangeArgs,
    ChangePreview,
    CreateFileArgs,
    EditFileArgs,
    FileWriteResult,
    ReplaceFileArgs,
    RestoreResult,
)
from toolcalls.activities.files.writing import FileWriteTools
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import SideEffect

_WRITE_TIMEOUTS = Timeouts(start_to_close=timedelta(seconds=60), heartbeat=timedelta(seconds=10))
"""The write and recovery file tools: seconds of work (1 MiB written, 8 MiB diffed) in a thread."""

FILE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="read_file",
        description=(
            "Read a UTF-8 text file inside the configured roots: up to max_chars (1-20,000) "
            "Unicode characters from offset. next_offset continues the read while the file is "
            "unchanged; null means the end. Symlinks, special files, binary content and invalid "
            "UTF-8 are refused."
        ),
        arguments=ReadFileArgs,
        result=ReadFileResult,
        side_effect=SideEffect.READ,
        capabilities=("filesystem.read",),
        # At most max_file_bytes (8 MiB by default) is read: seconds even on a slow disk.
        timeouts=Timeouts(start_to_close=timedelta(seconds=10)),
        implementation=FileReadTools,
    ),
    ToolSpec(
        name="list_files",
        description=(
            "List a directory inside the configured roots, or its tree (recursive), in "
            "filesystem order: entries whose names match a glob, typed file, dir or other "
            "(symlinks and special files, never followed). Version-control directories (.git, "
            ".hg, .svn, ...) are skipped unless include_vcs is true. At most 10,000 entries and "
            "20 levels are visited; check truncated and skipped before treating the list as "
            "complete."
        ),
        arguments=ListFilesArgs,
        result=ListFilesResult,
        side_effect=SideEffect.READ,
        capabilities=("filesystem.read",),
        # At most 10,000 directory entries, one stat each.
        timeouts=Timeouts(start_to_close=timedelta(seconds=10)),
        implementation=FileReadTools,
    ),
    ToolSpec(
        name="search_files",
        description=(
            "Find literal text (not a regex) in the files below a directory inside the "
            "configured roots, or in one file: paths, one-based line numbers and up to 500 "
            "characters of each matching line. Binary, unreadable and oversized files, and "
            "version-control directories (.git, .hg, .svn, ...) unless include_vcs is true, are "
            "skipped; at most 10,000 entries, 20 levels and 32 MiB are searched. Check "
            "truncated and skipped before treating no match as proof of absence."
        ),
        arguments=SearchFilesArgs,
        result=SearchFilesResult,
        side_effect=SideEffect.READ,
        capabilities=("filesystem.read",),
        # 32 MiB and 10,000 entries fit two minutes on a disk as slow as 1 MB/s; the thread
        # doing it is watched through heartbeats, which also carry cancellation to it.
        timeouts=Timeouts(start_to_close=timedelta(seconds=120), heartbeat=timedelta(seconds=10)),
        implementation=FileReadTools,
    ),
    ToolSpec(
        name="create_file",
        description=(
            "Create a new UTF-8 text file (mode 0600) at an absolute path inside the configured "
            "roots. Refused if anything already exists at the path; directories are not "
            "created. Content is at most 1 MiB. Returns a change_id for preview_change and "
            "restore_change."
        ),
        arguments=CreateFileArgs,
        result=FileWriteResult,
        side_effect=SideEffect.WRITE,
        capabilities=("filesystem.write",),
        # Writing and syncing at most 1 MiB, and diffing at most 8 MiB for a preview, take
        # seconds; the heartbeat reveals a lost worker (an uncertain change) quickly.
        timeouts=_WRITE_TIMEOUTS,
        implementation=FileWriteTools,
    ),
    ToolSpec(
        name="replace_file",
        description=(
            "Replace the whole content of an existing regular file inside the configured roots "
            "with UTF-8 text of at most 1 MiB, atomically, keeping its mode. Returns a change_id "
            "for preview_change and restore_change."
        ),
        arguments=ReplaceFileArgs,
        result=FileWriteResult,
        side_effect=SideEffect.WRITE,
        capabilities=("filesystem.write",),
        timeouts=_WRITE_TIMEOUTS,
        implementation=FileWriteTools,
    ),
    ToolSpec(
        name="edit_file",
        description=(
            "Replace exact, case-sensitive text in an existing UTF-8 file inside the configured "
            "roots, atomically. old_text must occur exactly once unless replace_all is true; "
            "a missing or ambiguous match changes nothing. Returns a change_id for "
            "preview_change and restore_change."
        ),
        arguments=EditFileArgs,
        result=FileWriteResult,
        side_effect=SideEffect.WRITE,
        capabilities=("filesystem.write",),
        timeouts=_WRITE_TIMEOUTS,
        implementation=FileWriteTools,
    ),
    ToolSpec(
        name="preview_change",
        description=(
            "Inspect a change made by create_file, replace_file or edit_file: its state, "
            "whether its outcome is uncertain, whether the file has changed since (a conflict), "
            "and the diff restoring it would apply now. Changes nothing."
        ),
        arguments=ChangeArgs,
        result=ChangePreview,
        side_effect=SideEffect.READ,
        capabilities=("filesystem.read",),
        timeouts=_WRITE_TIMEOUTS,
        implementation=FileWriteTools,
    ),
    ToolSpec(
        name="restore_change",
        description=(
            "Undo an applied change: write the file's previous bytes and mode back, or remove "
            "the file the change created. Refused, changing nothing, if the file no longer "
            "holds exactly what the change wrote."
        ),
        arguments=ChangeArgs,
        result=RestoreResult,
        side_effect=SideEffect.WRITE,
        capabilities=("filesystem.restore",),
        timeouts=_WRITE_TIMEOUTS,
        implementation=FileWriteTools,
    ),
)


class FileFamilySettings(FamilySettings):
    files: FilesSettings = Field(default_factory=FilesSettings)


def _build(settings: FileFamilySettings, resources: Resources) -> Iterable[object]:
    files = settings.files

    def roots() -> Roots:
        return resources.shared("files.roots", lambda: Roots(files.roots))

    built: list[object] = []
    if resources.serves(FileReadTools):
        built.append(FileReadTools(files, roots()))
    if resources.serves(FileWriteTools):
        checkpoints = files.checkpoints
        assert checkpoints is not None  # _problems refuses write tools without a store
        store = resources.open(
            "files.checkpoints", lambda: CheckpointStore(checkpoints), (CheckpointError,)
        )
        built.append(FileWriteTools(files, roots(), store))
    return built


def _problems(settings: FileFamilySettings, deployment: Deployment) -> list[str]:
    files = settings.files
    enabled = deployment.enabled_of(FILE_TOOLS)
    if not enabled:
        return []
    problems = roots_problems(
        "files.roots", files.roots, enabled, on_this_host=deployment.runs_here(enabled)
    )
    # create_file ... restore_change: writes exist only with a checkpoint store, and the store
    # (which holds the original bytes of every file changed) stays out of the model's reach.
    writes = [
        spec.name
        for spec in FILE_TOOLS
        if spec.implementation is FileWriteTools and spec.name in enabled
    ]
    store = files.checkpoints
    if writes and store is None:
        problems.append(f"files.checkpoints: {needs(writes)} a checkpoint store")
    elif writes and store is not None:
        where = Path(os.path.realpath(store))
        for index, root in enumerate(files.roots):
            if root.is_absolute() and where.is_relative_to(os.path.realpath(root)):
                problems.append(
                    f"files.checkpoints: {store} is inside files.roots.{index} ({root}); "
                    "keep the recovery records where the file tools cannot reach them"
                )
    return problems


FILES = Family(
    name="files",
    settings=FileFamilySettings,
    tools=FILE_TOOLS,
    build=_build,
    problems=_problems,
)
