"""Arguments and results of the write-side file tools, with the limits the model sees."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from toolcalls.activities.base import ToolArgs, ToolResult
from toolcalls.activities.files.checkpoints import ChangeKind, ChangeState
from toolcalls.activities.files.paths import MAX_PATH_BYTES, PathError, check_new_name, lexical_path
from toolcalls.activities.files.settings import MAX_WRITE_BYTES

CHANGE_ID_PREFIX = "chg-"
CHANGE_ID_PATTERN = r"^chg-[0-9a-f]{32}$"

_PATH_HELP = (
    "Absolute path of the file, inside one of the configured roots; its directory must exist."
)
_NEW_NAME_HELP = (
    ' The new name must be portable: no :*?"<>|, no Windows device name (CON, NUL, COM1...), '
    "no trailing dot or space, Unicode NFC."
)
_CONTENT_HELP = "The complete new content, UTF-8 text of at most 1 MiB (1,048,576 bytes)."


def change_id_for(idempotency_key: str) -> str:
    """The change id of the call with this idempotency key: the same call always gets the same."""
    return CHANGE_ID_PREFIX + hashlib.sha256(idempotency_key.encode()).hexdigest()[:32]


def describe_limit(limit: int) -> str:
    """``1048576 bytes (1 MiB)``: a limit as the errors state it."""
    mib = limit / (1024 * 1024)
    return f"{limit} bytes ({mib:g} MiB)" if mib >= 1 and mib == int(mib) else f"{limit} bytes"


def content_too_large(field: str, size: int, limit: int) -> str:
    return (
        f"{field} is {size} bytes of UTF-8; the limit is {describe_limit(limit)}, because "
        "written content travels through workflow history"
    )


def _utf8_size(value: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("is not valid UTF-8 text (it holds a lone surrogate)") from None


def _lexical_path(value: str) -> str:
    lexical_path(value)
    if value.endswith("/"):
        raise ValueError("ends with a slash; name a file, not a directory")
    return value


def _new_file_path(value: str) -> str:
    _lexical_path(value)
    try:
        check_new_name(value)
    except PathError as exc:
        raise ValueError(exc.reason) from None
    return value


def _content(value: str) -> str:
    size = _utf8_size(value)
    if size > MAX_WRITE_BYTES:
        # The field name is already in front of the message ("content: is ...").
        message = content_too_large("content", size, MAX_WRITE_BYTES)
        raise ValueError(message.removeprefix("content "))
    return value


class CreateFileArgs(ToolArgs):
    path: str = Field(
        min_length=1, max_length=MAX_PATH_BYTES, description=_PATH_HELP + _NEW_NAME_HELP
    )
    content: str = Field(description=_CONTENT_HELP)

    _path = field_validator("path")(_new_file_path)
    _content = field_validator("content")(_content)


class ReplaceFileArgs(ToolArgs):
    path: str = Field(min_length=1, max_length=MAX_PATH_BYTES, description=_PATH_HELP)
    content: str = Field(description=_CONTENT_HELP)

    _path = field_validator("path")(_lexical_path)
    _content = field_validator("content")(_content)


class EditFileArgs(ToolArgs):
    path: str = Field(min_length=1, max_length=MAX_PATH_BYTES, description=_PATH_HELP)
    old_text: str = Field(
        min_length=1,
        description="Exact text to find, case-sensitive; it must occur exactly once unless "
        "replace_all is true.",
    )
    new_text: str = Field(description="Text that replaces each match; may be empty.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of requiring exactly one."
    )

    _path = field_validator("path")(_lexical_path)

    @field_validator("old_text")
    @classmethod
    def _old_text(cls, value: str) -> str:
        _utf8_size(value)
        return value

    @field_validator("new_text")
    @classmethod
    def _new_text(cls, value: str, info: ValidationInfo) -> str:
        old = info.data.get("old_text")
        size = _utf8_size(value) + (len(old.encode()) if old is not None else 0)
        if size > MAX_WRITE_BYTES:
            raise ValueError(
                content_too_large("old_text and new_text together", size, MAX_WRITE_BYTES)
            )
        if value == old:
            raise ValueError("is the same as old_text: nothing would change")
        return value


class ChangeArgs(ToolArgs):
    change_id: str = Field(
        pattern=CHANGE_ID_PATTERN,
        description="The change_id a create_file, replace_file or edit_file call returned.",
    )


class FileWriteResult(ToolResult):
    """A change made: where, what the file holds now, and the id to inspect or undo it with."""

    change_id: str
    path: str
    kind: ChangeKind
    """``create``: the file is new; ``replace``: it existed (``edit_file`` too)."""
    state: ChangeState
    size: int
    sha256: str
    mode: str
    """Permission bits in octal, e.g. ``0600``."""
    replacements: int | None = None
    """For ``edit_file``: how many occurrences were replaced."""


class ChangePreview(ToolResult):
    """What restoring a change would do now, and whether it could."""

    change_id: str
    path: str
    tool: str
    kind: ChangeKind
    state: ChangeState
    uncertain: bool
    """The change was interrupted (or its outcome is unknown): whether it happened needs checking
    by hand; nothing is replayed or undone automatically."""
    conflict: bool
    """The file no longer holds exactly what the change wrote, so ``restore_change`` refuses."""
    conflict_reason: str | None
    restorable: bool
    """``applied`` and without conflict: ``restore_change`` would proceed."""
    restore_action: Literal["rewrite", "remove"]
    """Restoring writes the saved bytes and mode back, or removes the file the change created."""
    diff: str
    """Unified diff from the file as it is now to what restoring would leave."""
    diff_truncated: bool
    current_sha256: str | None
    """``None`` when there is no regular file at the path (or it is over the size limit)."""
    detail: str | None
    created_at: str
    updated_at: str
    workflow_id: str
    call_id: str


class RestoreResult(ToolResult):
    change_id: str
    path: str
    state: ChangeState
    action: Literal["rewrite", "remove"]
    size: int | None
    """Bytes written back; ``None`` when the created file was removed."""
    sha256: str | None
    mode: str | None
