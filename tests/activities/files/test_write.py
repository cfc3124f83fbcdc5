"""create_file, replace_file and edit_file on real files: exact bytes and modes, and refusals."""

from __future__ import annotations

import asyncio
import os
import resource
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support.file_writes import Files, call, fixable, is_link, mode, refused, run
from toolcalls.activities.files import atomic
from toolcalls.activities.files.checkpoints import ChangeKind, ChangeState
from toolcalls.activities.files.settings import MAX_WRITE_BYTES
from toolcalls.activities.files.write_models import (
    ChangeArgs,
    CreateFileArgs,
    EditFileArgs,
    FileWriteResult,
    ReplaceFileArgs,
    change_id_for,
)
from toolcalls.activities.files.writing import completed_anyway
from toolcalls.workflows.models.call import ErrorCode


async def test_create_writes_exact_bytes_with_mode_0600(files: Files) -> None:
    path = files.path("new.txt")
    content = "héllo\r\nworld\x00\n\u2028no newline at end"
    context = call()
    result = await run(files.tools.create_file, CreateFileArgs(path=path, content=content), context)
    assert files.entry("new.txt").read_bytes() == content.encode()
    assert mode(path) == 0o600
    assert result.change_id == change_id_for(context.idempotency_key)
    assert (result.kind, result.state, result.mode) == ("create", "applied", "0600")
    assert result.size == len(content.encode())
    assert result.sha256 == atomic.sha256(content.encode())
    assert files.state(result.change_id) == "applied"
    assert files.leftovers() == []


async def test_create_mode_ignores_the_umask(files: Files) -> None:
    old = os.umask(0o777)
    try:
        await run(files.tools.create_file, CreateFileArgs(path=files.path("u"), content="x"))
    finally:
        os.umask(old)
    assert mode(files.path("u")) == 0o600


async def test_create_refuses_an_existing_file(files: Files) -> None:
    target = files.entry("there.txt")
    target.write_text("keep me")
    error = await refused(
        run(files.tools.create_file, CreateFileArgs(path=str(target), content="new")),
        ErrorCode.INVALID_ARGUMENTS,
    )
    assert "already exists" in error.message
    assert "replace_file" in error.message
    assert fixable(error) == ["path"]
    assert target.read_text() == "keep me"
    assert files.leftovers() == []


async def test_create_refuses_a_symlink_at_the_name(files: Files) -> None:
    secret = files.outside / "secret.txt"
    secret.write_text("outside")
    os.symlink(secret, files.path("link"))
    os.symlink(files.outside / "absent", files.path("dangling"))
    for name in ("link", "dangling"):
        error = await refused(
            run(files.tools.create_file, CreateFileArgs(path=files.path(name), content="x")),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert "symbolic link" in error.message
    assert secret.read_text() == "outside"
    assert not (files.outside / "absent").exists()
    assert is_link(files.path("dangling"))


async def test_create_link_refuses_any_entry_that_appears_at_the_last_moment(
    files: Files,
) -> None:
    """The final step of a create is link(2), which never replaces nor follows the name."""
    dir_fd, name = files.roots.open_parent(files.path("late"))
    try:
        for make in (
            lambda: Path(files.path("late")).write_text("someone else"),
            lambda: os.symlink(files.outside / "nowhere", files.path("late")),
        ):
            make()
            temp = atomic.temp_name()
            atomic.write_temp(dir_fd, temp, b"mine", 0o600)
            with pytest.raises(FileExistsError):
                atomic.link_new(dir_fd, temp, name)
            atomic.remove(dir_fd, temp)
            os.unlink(files.path("late"))
    finally:
        os.close(dir_fd)
    assert not (files.outside / "nowhere").exists()


async def test_concurrent_creators_never_overwrite_each_other(files: Files) -> None:
    """A racing O_EXCL creator and create_file: exactly one wins, and the file is the winner's."""
    for attempt in range(20):
        path = files.path(f"race-{attempt}")
        raced: list[bool] = []

        def racer(path: str = path, raced: list[bool] = raced) -> None:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                raced.append(False)
                return
            os.write(fd, b"racer")
            os.close(fd)
            raced.append(True)

        thread = threading.Thread(target=racer)
        thread.start()
        try:
            await run(files.tools.create_file, CreateFileArgs(path=path, content="tool" * 10_000))
        except ApplicationError as exc:
            error: str | None = exc.type
        else:
            error = None
        thread.join()
        assert error in (None, "invalid_arguments", "precondition_failed")
        tool_won = error is None
        assert tool_won != raced[0]
        expected = b"tool" * 10_000 if tool_won else b"racer"
        assert files.entry(f"race-{attempt}").read_bytes() == expected
    assert files.leftovers() == []


async def test_missing_parent_directories_are_not_created(files: Files) -> None:
    error = await refused(
        run(files.tools.create_file, CreateFileArgs(path=files.path("no/such/f"), content="x")),
        ErrorCode.INVALID_ARGUMENTS,
    )
    assert "directories are not created" in error.message
    assert not (files.root / "no").exists()


def test_a_directory_that_cannot_be_opened_for_lack_of_descriptors_is_no_bad_path(
    files: Files,
) -> None:
    # EMFILE (like EACCES or EIO) says nothing about the path: not invalid_arguments.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (0, hard))
    try:
        with (
            pytest.raises(ApplicationError) as info,
            files.tools.space.parent("create_file", files.path("new.txt")),
        ):
            pass
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert info.value.type == ErrorCode.EXECUTION_FAILED.value, info.value.message
    assert fixable(info.value) == []
    assert "too many open files" in info.value.message


async def test_paths_outside_the_roots_are_refused(files: Files) -> None:
    error = await refused(
        run(
            files.tools.create_file,
            CreateFileArgs(path=str(files.outside / "f"), content="x"),
        ),
        ErrorCode.INVALID_ARGUMENTS,
    )
    assert "not inside a configured root" in error.message
    os.symlink(files.outside, files.root / "escape")
    error = await refused(
        run(files.tools.create_file, CreateFileArgs(path=files.path("escape/f"), content="x")),
        ErrorCode.INVALID_ARGUMENTS,
    )
    # The kernel refuses the linked directory (O_DIRECTORY | O_NOFOLLOW says ENOTDIR).
    assert "escape/f: a component is not a directory" in error.message
    assert os.listdir(files.outside) == []


async def test_replace_keeps_mode_and_writes_exact_bytes(files: Files) -> None:
    target = files.root / "conf.ini"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o640)
    before = os.stat(target)
    result = await run(
        files.tools.replace_file, ReplaceFileArgs(path=str(target), content="new\ncontent")
    )
    assert target.read_bytes() == b"new\ncontent"
    assert mode(target) == 0o640
    assert os.stat(target).st_ino != before.st_ino  # a new file, swapped in
    assert (result.kind, result.mode, result.size) == ("replace", "0640", 11)
    record = files.store.get(result.change_id)
    assert record is not None
    assert (record.preimage, record.preimage_mode) == (b"old\n", 0o640)
    assert files.leftovers() == []


async def test_replace_drops_setuid_but_keeps_the_other_bits(files: Files) -> None:
    target = files.root / "tool.sh"
    target.write_text("#!/bin/sh\n")
    os.chmod(target, 0o4755)
    await run(files.tools.replace_file, ReplaceFileArgs(path=str(target), content="echo\n"))
    assert mode(target) == 0o755


async def test_replace_and_edit_refuse_a_symlink_target(files: Files) -> None:
    secret = files.outside / "secret.txt"
    secret.write_text("alpha")
    os.symlink(secret, files.path("link.txt"))
    os.symlink(files.root / "inner.txt", files.path("inner-link"))
    (files.root / "inner.txt").write_text("alpha")
    for name in ("link.txt", "inner-link"):
        path = files.path(name)
        error = await refused(
            run(files.tools.replace_file, ReplaceFileArgs(path=path, content="x")),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert "symbolic link" in error.message
        error = await refused(
            run(files.tools.edit_file, EditFileArgs(path=path, old_text="alpha", new_text="b")),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert "symbolic link" in error.message
        assert is_link(path)
    assert secret.read_text() == "alpha"
    assert (files.root / "inner.txt").read_text() == "alpha"


async def test_replace_refuses_missing_files_directories_and_fifos(files: Files) -> None:
    (files.root / "dir").mkdir()
    os.mkfifo(files.root / "fifo")
    for name, reason in (
        ("absent", "does not exist"),
        ("dir", "is a directory"),
        ("fifo", "not a regular file"),
    ):
        error = await refused(
            run(files.tools.replace_file, ReplaceFileArgs(path=files.path(name), content="x")),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert reason in error.message
        assert fixable(error) == ["path"]
    assert not (files.root / "absent").exists()


async def test_edit_replaces_exactly_once(files: Files) -> None:
    target = files.root / "code.py"
    target.write_bytes(b"def f():\r\n    return 'Alpha'  # alpha\r\n")
    os.chmod(target, 0o644)
    result = await run(
        files.tools.edit_file,
        EditFileArgs(path=str(target), old_text="'Alpha'", new_text="'Beta'"),
    )
    assert target.read_bytes() == b"def f():\r\n    return 'Beta'  # alpha\r\n"
    assert (result.replacements, result.mode) == (1, "0644")


async def test_edit_refuses_missing_and_ambiguous_matches(files: Files) -> None:
    target = files.root / "notes.md"
    target.write_text("one two one\n")
    missing = await refused(
        run(files.tools.edit_file, EditFileArgs(path=str(target), old_text="ONE", new_text="1")),
        ErrorCode.INVALID_ARGUMENTS,
    )
    assert "not found" in missing.message
    assert "case-sensitive" in missing.message
    assert fixable(missing) == ["old_text"]
    ambiguous = await refused(
        run(files.tools.edit_file, EditFileArgs(path=str(target), old_text="one", new_text="1")),
        ErrorCode.INVALID_ARGUMENTS,
    )
    assert "occurs 2 times" in ambiguous.message
    assert fixable(ambiguous) == ["old_text", "replace_all"]
    assert target.read_text() == "one two one\n"
    result = await run(
        files.tools.edit_file,
        EditFileArgs(path=str(target), old_text="one", new_text="1", replace_all=True),
    )
    assert target.read_text() == "1 two 1\n"
    assert result.replacements == 2


async def test_edit_refuses_overlapping_matches(files: Files) -> None:
    # "\n\n" occurs once by str.count in "a\n\n\nb", but starts at two places: ambiguous.
    target = files.root / "gaps.txt"
    target.write_text("a\n\n\nb")
    args = EditFileArgs(path=str(target), old_text="\n\n", new_text="\n--\n")
    error = await refused(run(files.tools.edit_file, args), ErrorCode.INVALID_ARGUMENTS)
    assert "occurs twice (the matches overlap)" in error.message
    assert fixable(error) == ["old_text", "replace_all"]
    assert target.read_text() == "a\n\n\nb"
    result = await run(files.tools.edit_file, args.model_copy(update={"replace_all": True}))
    assert target.read_text() == "a\n--\n\nb"
    assert result.replacements == 1


def test_edit_arguments_refuse_empty_and_no_op_edits() -> None:
    with pytest.raises(ValidationError, match="at least 1 character"):
        EditFileArgs(path="/r/f", old_text="", new_text="x")
    with pytest.raises(ValidationError, match="same as old_text"):
        EditFileArgs(path="/r/f", old_text="x", new_text="x")
    with pytest.raises(ValidationError, match="ends with a slash"):
        EditFileArgs(path="/r/dir/", old_text="x", new_text="y")


async def test_edit_refuses_text_that_is_not_utf8(files: Files) -> None:
    target = files.root / "latin1.txt"
    target.write_bytes("café".encode("latin-1"))
    error = await refused(
        run(files.tools.edit_file, EditFileArgs(path=str(target), old_text="caf", new_text="x")),
        ErrorCode.INVALID_ARGUMENTS,
    )
    assert "not UTF-8" in error.message
    assert target.read_bytes() == "café".encode("latin-1")


def test_content_over_one_mib_is_refused_with_the_limit() -> None:
    with pytest.raises(ValidationError) as info:
        CreateFileArgs(path="/r/f", content="x" * (MAX_WRITE_BYTES + 1))
    message = str(info.value)
    assert "1048577 bytes" in message
    assert "1048576 bytes (1 MiB)" in message
    assert "workflow history" in message
    # Bytes of UTF-8 count, not characters.
    with pytest.raises(ValidationError, match="1 MiB"):
        ReplaceFileArgs(path="/r/f", content="é" * (MAX_WRITE_BYTES // 2 + 1))
    with pytest.raises(ValidationError, match="old_text and new_text together"):
        EditFileArgs(path="/r/f", old_text="a" * MAX_WRITE_BYTES, new_text="b")
    assert len(CreateFileArgs(path="/r/f", content="x" * MAX_WRITE_BYTES).content) > 0


async def test_deployment_write_limit_is_stated(tmp_path: Path) -> None:
    files = Files(tmp_path, max_write_bytes=1000)
    try:
        error = await refused(
            run(files.tools.create_file, CreateFileArgs(path=files.path("f"), content="x" * 1001)),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert "1001 bytes" in error.message
        assert "the limit is 1000 bytes" in error.message
        assert fixable(error) == ["content"]
        assert not files.entry("f").exists()
    finally:
        files.close()


async def test_file_size_limit_is_stated(tmp_path: Path) -> None:
    files = Files(tmp_path, max_file_bytes=2 * 1024 * 1024)
    try:
        big = files.root / "big.log"
        big.write_bytes(b"a\n" * (1024 * 1024 + 1))
        error = await refused(
            run(files.tools.edit_file, EditFileArgs(path=str(big), old_text="a", new_text="b")),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert "is 2097154 bytes; the limit is 2097152 bytes (2 MiB)" in error.message
        small = files.root / "small.txt"
        small.write_bytes(b"ab" * 1024 * 1024)
        error = await refused(
            run(
                files.tools.edit_file,
                EditFileArgs(path=str(small), old_text="a", new_text="aa", replace_all=True),
            ),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert "would be 3145728 bytes" in error.message
        assert small.read_bytes() == b"ab" * 1024 * 1024
    finally:
        files.close()


async def test_second_execution_of_the_same_call_is_detected(files: Files) -> None:
    context = call("toolu_same")
    first = await run(
        files.tools.create_file, CreateFileArgs(path=files.path("once"), content="1"), context
    )
    os.unlink(files.path("once"))
    error = await refused(
        run(files.tools.create_file, CreateFileArgs(path=files.path("once"), content="1"), context),
        ErrorCode.PRECONDITION_FAILED,
    )
    assert f"already ran as change {first.change_id}, now applied" in error.message
    assert not files.entry("once").exists()


async def test_the_record_is_saved_before_the_file_is_touched(tmp_path: Path) -> None:
    """Another process holds the store's write lock: the record cannot be saved, so no write."""
    files = Files(tmp_path, busy_timeout=0.2)
    target = files.root / "kept.txt"
    target.write_text("original")
    os.chmod(target, 0o644)
    blocker = sqlite3.connect(files.db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        for method, args in (
            (files.tools.replace_file, ReplaceFileArgs(path=str(target), content="new")),
            (files.tools.create_file, CreateFileArgs(path=files.path("fresh"), content="new")),
        ):
            error = await refused(run(method, args), ErrorCode.EXECUTION_FAILED)
            assert "recovery record could not be saved" in error.message
            assert "nothing was changed" in error.message
    finally:
        blocker.rollback()
        blocker.close()
    assert target.read_text() == "original"
    assert mode(target) == 0o644
    assert not files.entry("fresh").exists()
    assert files.leftovers() == []
    assert files.store.unfinished() == []
    files.close()


async def _canceled_while_waiting(
    files: Files, path: str, method: Any, args: Any
) -> tuple[ApplicationError, list[dict[str, object]]]:
    """Run ``method`` while another change to ``path`` is in flight (it waits for it in its
    thread), cancel it there, then let it go on: what it raises, and its heartbeats."""
    beats: list[dict[str, object]] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details[0])
    with files.tools.space.locked(path):
        task = asyncio.ensure_future(env.run(method, args, call()))
        while not beats:
            await asyncio.sleep(0.01)
        env.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # it waits for its thread: a change never stops halfway
    return await refused(task, ErrorCode.CANCELED), beats


async def test_a_write_canceled_before_its_swap_changes_nothing(files: Files) -> None:
    """The cancellation reaches the write while the new content is written aside: the temporary
    file is removed, the record settles failed, and the tool says nothing changed."""
    target = files.entry("kept.txt")
    target.write_text("original")
    for method, args in (
        (files.tools.create_file, CreateFileArgs(path=files.path("slow.txt"), content="done")),
        (files.tools.replace_file, ReplaceFileArgs(path=str(target), content="new")),
    ):
        error, beats = await _canceled_while_waiting(files, args.path, method, args)
        assert error.message.endswith(
            "canceled before the new content was in place; nothing was changed"
        )
        output = error.details[0]["output"]
        assert (output["changed"], output["state"]) == (False, "failed")
        assert files.state(output["change_id"]) == "failed"
        assert beats[0]["written"] == 0
    assert not files.entry("slow.txt").exists()
    assert target.read_text() == "original"
    assert files.leftovers() == []
    assert files.store.unfinished() == []


async def test_a_restore_canceled_after_it_started_completes_and_names_the_change(
    files: Files,
) -> None:
    """A restore has no point to stop at before its rename: it completes, and the cancellation is
    reported with the change it settled."""
    path = files.path("made.txt")
    made = await run(files.tools.create_file, CreateFileArgs(path=path, content="made"))
    error, _ = await _canceled_while_waiting(
        files, path, files.tools.restore_change, ChangeArgs(change_id=made.change_id)
    )
    assert error.message == (
        f"restore_change: {made.change_id}: canceled after the change started; it completed "
        f"anyway as change {made.change_id} (restored)"
    )
    assert error.details[0]["output"]["action"] == "remove"
    assert not files.entry("made.txt").exists()
    assert files.state(made.change_id) == "restored"


def test_a_write_canceled_too_late_names_its_change_and_how_to_undo_it() -> None:
    """The cancellation reached the write after its swap: the change is applied, and named."""
    result = FileWriteResult(
        change_id="chg_1",
        path="/srv/a.txt",
        kind=ChangeKind.CREATE,
        state=ChangeState.APPLIED,
        size=4,
        sha256="0" * 64,
        mode="0600",
    )
    error = completed_anyway("create_file", "/srv/a.txt", result)
    assert isinstance(error, ApplicationError)
    assert error.type == ErrorCode.CANCELED.value
    assert error.message == (
        "create_file: /srv/a.txt: canceled after the change started; it completed anyway as "
        "change chg_1 (applied); restore_change with that change_id undoes it"
    )
    assert error.details[0]["output"]["change_id"] == "chg_1"
