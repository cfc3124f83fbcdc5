"""What each write tool does to the file it finds: the new bytes, or why it cannot apply.

Pure functions of the arguments and the file's current state, so the approval preview and the
execution compute the same bytes from the same file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolcalls.activities.errors import tool_error
from toolcalls.activities.files.atomic import FileState
from toolcalls.activities.files.checkpoints import ChangeKind
from toolcalls.activities.files.paths import PathError, check_new_name
from toolcalls.activities.files.reading import path_failure
from toolcalls.activities.files.write_models import EditFileArgs, content_too_large, describe_limit
from toolcalls.workflows.models.call import ErrorCode

Compute = Callable[[str, FileState, int], tuple[bytes, int | None]]
"""``(path, current state, file size limit) -> (new bytes, replacements)``."""


@dataclass(frozen=True)
class Edit:
    """How one write call turns the file it finds into the bytes it writes."""

    tool: str
    kind: ChangeKind
    compute: Compute
    """Raises a ``tool_error`` when the call cannot apply to what is there."""


def encoded(tool: str, what: str, text: str, limit: int, fields: list[str]) -> bytes:
    """``text`` as UTF-8, refused over ``limit`` with the limit in the message."""
    data = text.encode("utf-8")
    if len(data) > limit:
        raise tool_error(
            ErrorCode.INVALID_ARGUMENTS,
            f"{tool}: {content_too_large(what, len(data), limit)}",
            fixable_args=fields,
        )
    return data


def creation(content: bytes) -> Edit:
    def compute(path: str, state: FileState, limit: int) -> tuple[bytes, int | None]:
        try:
            # The model checked this at plan; a call that skipped the plan is checked here.
            check_new_name(path)
        except PathError as exc:
            raise path_failure("create_file", exc) from None
        if state.exists:
            what = f" ({state.reason})" if state.reason else ""
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"create_file: {path}: already exists{what}; "
                "replace_file or edit_file change an existing file",
                fixable_args=["path"],
            )
        return content, None

    return Edit("create_file", ChangeKind.CREATE, compute)


def replacement(content: bytes) -> Edit:
    def compute(path: str, state: FileState, limit: int) -> tuple[bytes, int | None]:
        existing("replace_file", path, state, limit)
        return content, None

    return Edit("replace_file", ChangeKind.REPLACE, compute)


def text_edit(args: EditFileArgs) -> Edit:
    """Exact, case-sensitive replacement of ``old_text``: once, or everywhere with replace_all."""

    def compute(path: str, state: FileState, limit: int) -> tuple[bytes, int | None]:
        data = existing("edit_file", path, state, limit)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"edit_file: {path}: not UTF-8 text; edit_file changes text files only",
                fixable_args=["path"],
            ) from None
        count = text.count(args.old_text)
        if count == 0:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"edit_file: {path}: old_text not found (matching is exact and case-sensitive)",
                fixable_args=["old_text"],
            )
        # str.count does not count overlapping matches ("aa" in "aaa"): a second one starting
        # inside the first is still another place the edit could mean.
        overlapping = count == 1 and text.find(args.old_text, text.find(args.old_text) + 1) >= 0
        if (count > 1 or overlapping) and not args.replace_all:
            where = f"{count} times" if count > 1 else "twice (the matches overlap)"
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"edit_file: {path}: old_text occurs {where}; add surrounding text to "
                "make it unique, or set replace_all",
                fixable_args=["old_text", "replace_all"],
            )
        new = text.replace(args.old_text, args.new_text).encode("utf-8")
        if len(new) > limit:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"edit_file: {path}: the edited file would be {len(new)} bytes; the limit is "
                f"{describe_limit(limit)}",
                fixable_args=["new_text"],
            )
        return new, count

    return Edit("edit_file", ChangeKind.REPLACE, compute)


def existing(tool: str, path: str, state: FileState, limit: int) -> bytes:
    """The bytes of the regular file a replace or edit needs, or the error saying why not."""
    if state.kind == "absent":
        reason = "does not exist; create_file makes a new file"
    elif state.kind == "other":
        reason = f"{state.reason}; only regular files can be written"
    elif state.data is None:
        reason = f"is {state.size} bytes; the limit is {describe_limit(limit)}"
    else:
        return state.data
    raise tool_error(
        ErrorCode.INVALID_ARGUMENTS, f"{tool}: {path}: {reason}", fixable_args=["path"]
    )
