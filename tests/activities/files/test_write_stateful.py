"""Random sequences of writes, restores and outside edits against a model of files and changes."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, settings, strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
)
from temporalio.exceptions import ApplicationError

from tests.support.file_writes import Files, run
from toolcalls.activities.files.write_models import (
    ChangeArgs,
    CreateFileArgs,
    EditFileArgs,
    ReplaceFileArgs,
)

NAMES = ("a.txt", "b.txt")
texts = st.text(alphabet="ab\n", max_size=8)
needles = st.text(alphabet="ab\n", min_size=1, max_size=3)

File = tuple[bytes, int]
"""Content and mode."""


@dataclass
class Change:
    change_id: str
    name: str
    before: File | None
    after: File
    state: str = "applied"


class FileWrites(RuleBasedStateMachine):
    """The model: what each file holds, and every change with the state it must have."""

    changes = Bundle("changes")

    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp())
        self.files = Files(self.base)
        self.loop = asyncio.new_event_loop()
        self.model: dict[str, File | None] = dict.fromkeys(NAMES)
        self.recorded: list[Change] = []

    def teardown(self) -> None:
        self.loop.close()
        self.files.close()
        shutil.rmtree(self.base)

    def call(self, method: Any, args: Any) -> tuple[Any, str | None]:
        """The result, or the error code the tool answered with."""
        try:
            return self.loop.run_until_complete(run(method, args)), None
        except ApplicationError as exc:
            return None, exc.type

    def applied(self, name: str, result: Any, error: str | None, after: File) -> Change:
        assert error is None, error
        change = Change(result.change_id, name, self.model[name], after)
        self.model[name] = after
        self.recorded.append(change)
        return change

    @rule(target=changes, name=st.sampled_from(NAMES), text=texts)
    def create(self, name: str, text: str) -> Change | MultipleResults[Change]:
        args = CreateFileArgs(path=self.files.path(name), content=text)
        result, error = self.call(self.files.tools.create_file, args)
        if self.model[name] is not None:
            assert error == "invalid_arguments"
            return multiple()
        return self.applied(name, result, error, (text.encode(), 0o600))

    @rule(target=changes, name=st.sampled_from(NAMES), text=texts)
    def replace(self, name: str, text: str) -> Change | MultipleResults[Change]:
        args = ReplaceFileArgs(path=self.files.path(name), content=text)
        result, error = self.call(self.files.tools.replace_file, args)
        current = self.model[name]
        if current is None:
            assert error == "invalid_arguments"
            return multiple()
        return self.applied(name, result, error, (text.encode(), current[1]))

    @rule(
        target=changes,
        name=st.sampled_from(NAMES),
        old=needles,
        new=texts,
        replace_all=st.booleans(),
    )
    def edit(
        self, name: str, old: str, new: str, replace_all: bool
    ) -> Change | MultipleResults[Change]:
        assume(old != new)
        args = EditFileArgs(
            path=self.files.path(name), old_text=old, new_text=new, replace_all=replace_all
        )
        result, error = self.call(self.files.tools.edit_file, args)
        current = self.model[name]
        text = current[0].decode() if current is not None else ""
        count = text.count(old)
        # Every place the text starts, overlapping ones included: more than one is ambiguous.
        starts = sum(text.startswith(old, i) for i in range(len(text)))
        if current is None or count == 0 or (starts > 1 and not replace_all):
            assert error == "invalid_arguments"
            return multiple()
        after = current[0].decode().replace(old, new).encode()
        assert result.replacements == count
        return self.applied(name, result, error, (after, current[1]))

    @rule(change=changes)
    def restore(self, change: Change) -> None:
        result, error = self.call(
            self.files.tools.restore_change, ChangeArgs(change_id=change.change_id)
        )
        if change.state != "applied" or self.model[change.name] != change.after:
            assert error == "precondition_failed"
            return
        assert error is None, error
        assert result.action == ("remove" if change.before is None else "rewrite")
        change.state = "restored"
        self.model[change.name] = change.before

    @rule(change=changes)
    def preview(self, change: Change) -> None:
        result, error = self.call(
            self.files.tools.preview_change, ChangeArgs(change_id=change.change_id)
        )
        assert error is None, error
        assert result.state == change.state
        assert result.conflict == (self.model[change.name] != change.after)
        assert result.restorable == (change.state == "applied" and not result.conflict)
        assert not result.uncertain

    @rule(name=st.sampled_from(NAMES), text=texts)
    def someone_else_writes(self, name: str, text: str) -> None:
        """An outside writer, in place: same file, new bytes (or a new file, mode 0644)."""
        path = self.files.path(name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, text.encode())
        os.close(fd)
        current = self.model[name]
        self.model[name] = (text.encode(), current[1] if current else 0o644)

    @invariant()
    def disk_matches_the_model(self) -> None:
        for name, expected in self.model.items():
            path = self.files.root / name
            if expected is None:
                assert not os.path.lexists(path)
            else:
                assert (path.read_bytes(), os.stat(path).st_mode & 0o7777) == expected
        assert self.files.leftovers() == []

    @invariant()
    def records_match_the_model(self) -> None:
        for change in self.recorded:
            assert self.files.state(change.change_id) == change.state
        assert self.files.store.unfinished() == []


TestFileWrites = FileWrites.TestCase
TestFileWrites.settings = settings(
    max_examples=50,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
