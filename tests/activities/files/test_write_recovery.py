"""Approval previews, preconditions, preview_change and restore_change on real files."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest

from tests.support.file_writes import (
    Files,
    approved,
    fixable,
    is_link,
    mode,
    present,
    refused,
    run,
)
from toolcalls.activities.files import atomic
from toolcalls.activities.files.checkpoints import ChangeState
from toolcalls.activities.files.write_models import (
    ChangeArgs,
    CreateFileArgs,
    EditFileArgs,
    ReplaceFileArgs,
)
from toolcalls.workflows.models.call import ErrorCode


async def write(files: Files, name: str, old: str, new: str, file_mode: int = 0o640) -> str:
    """Replace ``name`` (holding ``old``) with ``new``; the change id."""
    target = files.root / name
    target.write_text(old)
    os.chmod(target, file_mode)
    result = await run(files.tools.replace_file, ReplaceFileArgs(path=str(target), content=new))
    return result.change_id


async def test_the_approval_preview_is_the_diff_and_the_preimage_digest(files: Files) -> None:
    target = files.root / "a.txt"
    target.write_bytes(b"one\ntwo\nthree")
    os.chmod(target, 0o644)
    args = EditFileArgs(path=str(target), old_text="two", new_text="2")
    prepared, _ = await approved(files.tools.prepare_edit_file, args)
    [artifact] = prepared.preview
    assert artifact.kind == "diff"
    assert artifact.text == (
        f"--- a{target}\n+++ b{target}\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        "\\ No newline at end of file\n"
    )
    assert artifact.data is not None
    assert artifact.data["preimage_sha256"] == atomic.sha256(b"one\ntwo\nthree")
    assert artifact.data["postimage_sha256"] == atomic.sha256(b"one\n2\nthree")
    assert (artifact.data["preimage_mode"], artifact.data["mode"]) == ("0644", "0644")
    assert artifact.data["replacements"] == 1
    info = os.stat(target)
    assert prepared.precondition is not None
    assert prepared.precondition["target"] == {
        "dev": info.st_dev,
        "ino": info.st_ino,
        "mode": 0o644,
        "size": 13,
        "sha256": atomic.sha256(b"one\ntwo\nthree"),
    }
    assert prepared.precondition["parent"] == f"{info.st_dev}:{os.stat(files.root).st_ino}"
    assert target.read_bytes() == b"one\ntwo\nthree"  # previewing changes nothing


async def test_a_create_preview_diffs_from_nothing(files: Files) -> None:
    path = files.path("new.md")
    prepared, context = await approved(
        files.tools.prepare_create_file, CreateFileArgs(path=path, content="# Title\n")
    )
    assert prepared.preview[0].text == f"--- /dev/null\n+++ b{path}\n@@ -0,0 +1 @@\n+# Title\n"
    assert prepared.preview[0].data is not None
    assert prepared.preview[0].data["preimage_sha256"] is None
    assert not files.entry("new.md").exists()
    await run(files.tools.create_file, CreateFileArgs(path=path, content="# Title\n"), context)
    assert files.entry("new.md").read_text() == "# Title\n"


async def test_a_binary_preimage_is_summarised(files: Files) -> None:
    target = files.root / "blob.bin"
    target.write_bytes(b"\x00\x01\xff")
    prepared, _ = await approved(
        files.tools.prepare_replace_file, ReplaceFileArgs(path=str(target), content="text")
    )
    text = prepared.preview[0].text
    assert text is not None
    assert text.startswith("binary content: 3 bytes (sha256 ")
    assert prepared.preview[0].data is not None
    assert prepared.preview[0].data["binary"] is True


async def test_a_preview_of_scattered_edits_in_a_large_file_is_quick(files: Files) -> None:
    # difflib's matching took 11 s for this 1 MB file (1,000 scattered changes), in a thread
    # nothing can stop, and minutes for larger ones; past a bound lines are compared in place.
    target = files.root / "big.log"
    lines = [f"row {i} {'target' if i % 60 == 0 else 'plain'}\n" for i in range(60_000)]
    target.write_text("".join(lines))
    args = EditFileArgs(path=str(target), old_text="target", new_text="done", replace_all=True)
    started = time.monotonic()
    prepared, _ = await approved(files.tools.prepare_edit_file, args)
    # Far below difflib's 11 s on this file, and far above the in-place comparison's runtime.
    assert time.monotonic() - started < 5
    text = prepared.preview[0].text
    assert text is not None
    assert text.startswith(f"--- a{target}\n+++ b{target}\n@@ -1,4 +1,4 @@\n-row 0 target\n")
    assert "\n+row 0 done\n row 1 plain\n" in text
    assert "\n-row 60 target\n+row 60 done\n" in text
    assert prepared.preview[0].data is not None
    assert prepared.preview[0].data["replacements"] == 1_000


async def test_edits_that_cannot_apply_fail_at_the_preview(files: Files) -> None:
    target = files.root / "b.txt"
    target.write_text("x x")
    for old, reason in (("y", "not found"), ("x", "occurs 2 times")):
        error = await refused(
            run(
                files.tools.prepare_edit_file,
                EditFileArgs(path=str(target), old_text=old, new_text="z"),
            ),
            ErrorCode.INVALID_ARGUMENTS,
        )
        assert reason in error.message


@pytest.mark.parametrize(
    ("meddle", "reason"),
    [
        (lambda p: p.write_text("someone else's"), "changed since the preview"),
        (lambda p: os.chmod(p, 0o600), "changed since the preview"),
        (lambda p: os.replace(p.with_name("copy"), p), "changed since the preview"),
        (lambda p: p.unlink(), "was removed since the preview"),
    ],
)
async def test_execution_refuses_a_file_changed_after_the_preview(
    files: Files, meddle: object, reason: str
) -> None:
    target = files.root / "c.txt"
    target.write_text("approved bytes")
    os.chmod(target, 0o644)
    (files.root / "copy").write_text("approved bytes")  # same bytes, another inode
    os.chmod(files.root / "copy", 0o644)
    args = ReplaceFileArgs(path=str(target), content="new")
    _, context = await approved(files.tools.prepare_replace_file, args)
    meddle(target)  # type: ignore[operator]
    before = target.read_bytes() if target.exists() else None
    error = await refused(
        run(files.tools.replace_file, args, context), ErrorCode.PRECONDITION_FAILED
    )
    assert reason in error.message
    assert (target.read_bytes() if target.exists() else None) == before
    assert files.leftovers() == []


async def test_execution_refuses_a_replaced_directory(files: Files) -> None:
    (files.root / "d").mkdir()
    (files.root / "d" / "f").write_text("same")
    args = EditFileArgs(path=files.path("d/f"), old_text="same", new_text="other")
    _, context = await approved(files.tools.prepare_edit_file, args)
    os.rename(files.root / "d", files.root / "d-old")
    (files.root / "d").mkdir()
    (files.root / "d" / "f").write_text("same")
    error = await refused(run(files.tools.edit_file, args, context), ErrorCode.PRECONDITION_FAILED)
    assert "directory was replaced" in error.message
    assert (files.root / "d" / "f").read_text() == "same"


async def test_create_refuses_a_target_created_after_the_preview(files: Files) -> None:
    path = files.path("late.txt")
    args = CreateFileArgs(path=path, content="mine")
    _, context = await approved(files.tools.prepare_create_file, args)
    files.entry("late.txt").write_text("theirs")
    error = await refused(
        run(files.tools.create_file, args, context), ErrorCode.PRECONDITION_FAILED
    )
    assert "was created since the preview" in error.message
    assert files.entry("late.txt").read_text() == "theirs"


async def test_restore_writes_back_bytes_and_mode(files: Files) -> None:
    change_id = await write(files, "r.txt", "before\n", "after\n", file_mode=0o640)
    preview = await run(files.tools.preview_change, ChangeArgs(change_id=change_id))
    assert (preview.state, preview.restorable, preview.conflict, preview.uncertain) == (
        "applied",
        True,
        False,
        False,
    )
    assert preview.restore_action == "rewrite"
    assert "-after\n+before\n" in preview.diff
    result = await run(files.tools.restore_change, ChangeArgs(change_id=change_id))
    assert (files.root / "r.txt").read_text() == "before\n"
    assert mode(files.root / "r.txt") == 0o640
    assert (result.state, result.action, result.mode, result.size) == (
        "restored",
        "rewrite",
        "0640",
        7,
    )
    assert files.state(change_id) == "restored"
    again = await refused(
        run(files.tools.restore_change, ChangeArgs(change_id=change_id)),
        ErrorCode.PRECONDITION_FAILED,
    )
    assert "is restored; only an applied change can be restored" in again.message
    assert files.leftovers() == []


async def test_restore_refuses_a_conflict_and_preview_flags_it(files: Files) -> None:
    change_id = await write(files, "k.txt", "v1\n", "v2\n")
    (files.root / "k.txt").write_text("v3 by someone\n")
    preview = await run(files.tools.preview_change, ChangeArgs(change_id=change_id))
    assert preview.conflict
    assert not preview.restorable
    assert preview.conflict_reason == "the file's content changed after the change"
    assert "-v3 by someone\n+v1\n" in preview.diff
    assert preview.current_sha256 == atomic.sha256(b"v3 by someone\n")
    error = await refused(
        run(files.tools.restore_change, ChangeArgs(change_id=change_id)),
        ErrorCode.PRECONDITION_FAILED,
    )
    assert "conflict: the file's content changed" in error.message
    assert (files.root / "k.txt").read_text() == "v3 by someone\n"
    assert files.state(change_id) == "applied"
    os.chmod(files.root / "k.txt", 0o600)
    (files.root / "k.txt").write_text("v2\n")
    mode_only = await run(files.tools.preview_change, ChangeArgs(change_id=change_id))
    assert mode_only.conflict_reason == "the file's mode changed after the change (now 0600)"


async def test_restoring_a_created_file_removes_it(files: Files) -> None:
    created = await run(
        files.tools.create_file, CreateFileArgs(path=files.path("n.txt"), content="hi\n")
    )
    preview = await run(files.tools.preview_change, ChangeArgs(change_id=created.change_id))
    assert preview.restore_action == "remove"
    assert preview.diff.endswith("+++ /dev/null\n@@ -1 +0,0 @@\n-hi\n")
    result = await run(files.tools.restore_change, ChangeArgs(change_id=created.change_id))
    assert (result.action, result.size, result.sha256) == ("remove", None, None)
    assert not present(files.path("n.txt"))


@pytest.mark.parametrize("kind", ["replace", "create"])
async def test_restore_refuses_a_path_that_became_a_symlink(files: Files, kind: str) -> None:
    if kind == "replace":
        change_id = await write(files, "s.txt", "mine before", "mine after")
    else:
        created = await run(
            files.tools.create_file, CreateFileArgs(path=files.path("s.txt"), content="made")
        )
        change_id = created.change_id
    outside = files.outside / "target"
    outside.write_text("mine after")  # even the expected content, reached through a link
    os.unlink(files.path("s.txt"))
    os.symlink(outside, files.path("s.txt"))
    preview = await run(files.tools.preview_change, ChangeArgs(change_id=change_id))
    assert preview.conflict_reason == "the path is a symbolic link"
    assert preview.diff == ""
    error = await refused(
        run(files.tools.restore_change, ChangeArgs(change_id=change_id)),
        ErrorCode.PRECONDITION_FAILED,
    )
    assert "is a symbolic link" in error.message
    assert is_link(files.path("s.txt"))
    assert outside.read_text() == "mine after"


async def test_an_approved_restore_refuses_a_file_changed_after_its_preview(
    files: Files,
) -> None:
    change_id = await write(files, "p.txt", "a", "b")
    args = ChangeArgs(change_id=change_id)
    prepared, context = await approved(files.tools.prepare_restore_change, args)
    assert prepared.preview[0].data is not None
    assert prepared.preview[0].data["action"] == "rewrite"
    assert prepared.preview[0].data["restored_sha256"] == atomic.sha256(b"a")
    # Same bytes and mode, but another file: not what the approver saw.
    (files.root / "copy").write_text("b")
    os.chmod(files.root / "copy", 0o640)
    os.replace(files.root / "copy", files.root / "p.txt")
    error = await refused(
        run(files.tools.restore_change, args, context), ErrorCode.PRECONDITION_FAILED
    )
    assert "changed since the restore was previewed" in error.message
    assert (files.root / "p.txt").read_text() == "b"
    assert files.state(change_id) == "applied"
    _, fresh = await approved(files.tools.prepare_restore_change, args)
    await run(files.tools.restore_change, args, fresh)
    assert (files.root / "p.txt").read_text() == "a"


async def test_a_conflicting_restore_fails_at_its_preview(files: Files) -> None:
    change_id = await write(files, "q.txt", "a", "b")
    (files.root / "q.txt").unlink()
    error = await refused(
        run(files.tools.prepare_restore_change, ChangeArgs(change_id=change_id)),
        ErrorCode.PRECONDITION_FAILED,
    )
    assert "conflict: the file no longer exists" in error.message
    preview = await run(files.tools.preview_change, ChangeArgs(change_id=change_id))
    assert preview.current_sha256 is None
    assert f"--- /dev/null\n+++ b{files.path('q.txt')}\n" in preview.diff


async def test_unknown_change_ids_are_the_models_to_fix(files: Files) -> None:
    args = ChangeArgs(change_id="chg-" + "0" * 32)
    for method in (files.tools.preview_change, files.tools.restore_change):
        error = await refused(run(method, args), ErrorCode.INVALID_ARGUMENTS)
        assert "no change chg-0000" in error.message
        assert fixable(error) == ["change_id"]


async def test_preview_reports_uncertain_changes(files: Files) -> None:
    change_id = await write(files, "u.txt", "a", "b")
    record = files.store.get(change_id)
    assert record is not None
    # Another record, left prepared as by a worker that died mid-write.
    files.store.begin(
        replace(record, change_id="chg-" + "1" * 32, state=ChangeState.PREPARED, temp_name=None)
    )
    preview = await run(files.tools.preview_change, ChangeArgs(change_id="chg-" + "1" * 32))
    assert (preview.state, preview.uncertain, preview.restorable) == ("prepared", True, False)
    applied = await run(files.tools.preview_change, ChangeArgs(change_id=change_id))
    assert not applied.uncertain
