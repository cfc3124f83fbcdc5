"""The ``git`` tool's arguments: six operations, literal relative paths, option-free revisions.

Every combination the spec does not list is refused here, at validation, so an unsupported call
ends at plan (``invalid_arguments`` naming the option) before any policy or approval. An option at
its default counts as not given: the plan's normalised arguments always carry every field.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from toolcalls.activities.base import ToolArgs

ReadOperation = Literal["status", "diff", "log", "show"]
Operation = Literal["status", "diff", "log", "show", "add", "commit"]
READ_OPERATIONS: frozenset[str] = frozenset({"status", "diff", "log", "show"})
WRITE_OPERATIONS: frozenset[str] = frozenset({"add", "commit"})

MAX_PATHS = 100
MAX_PATH_BYTES = 4_096
MAX_REVISION_CHARS = 256
MAX_MESSAGE_CHARS = 16_384
MIN_COUNT = 1
MAX_COUNT = 100
DEFAULT_MAX_COUNT = 10
"""``log``'s ``max_count``: 1-100, default 10 (the spec's numbers)."""

SUPPORTED: dict[str, frozenset[str]] = {
    "status": frozenset({"paths"}),
    "diff": frozenset({"paths", "revision", "staged"}),
    "log": frozenset({"paths", "revision", "max_count"}),
    "show": frozenset({"paths", "revision"}),
    "add": frozenset({"paths"}),
    "commit": frozenset({"message"}),
}
"""The options each operation takes; anything else given is refused."""
REQUIRED: dict[str, str] = {"add": "paths", "commit": "message"}

DESCRIPTION = (
    "Run one git operation in the deployment's repository: status (short, with branch), diff "
    "(working tree, or the index with staged=true, optionally against a revision), log (at most "
    "max_count commits, default 10), show (a commit, default HEAD), add (stage paths, deletions "
    "included) or commit (all staged changes, with a message). Paths are literal and relative to "
    "the repository directory. Returns exit_code, stdout, stderr, truncated, timed_out, canceled, "
    "budget_exceeded and duration_seconds; a non-zero exit or a timeout is a result, not a failure."
)
READ_ONLY_DESCRIPTION = (
    "Run one read-only git operation in the deployment's repository: status (short, with "
    "branch), diff (working tree, or the index with staged=true, optionally against a revision), "
    "log (at most max_count commits, default 10) or show (a commit, default HEAD). Paths are "
    "literal and relative to the repository directory. Returns exit_code, stdout, stderr, "
    "truncated, timed_out, canceled, budget_exceeded and duration_seconds; a non-zero exit or a "
    "timeout is a result, not a failure."
)


def check_path(path: str) -> str:
    """A literal path relative to the repository directory, or ``ValueError`` saying why not."""
    if not path:
        raise ValueError("a path is empty")
    if "\x00" in path:
        raise ValueError(f"{path[:100]!r}: contains a NUL byte")
    try:
        # As the kernel will get it (a lone surrogate other than an escaped byte cannot be).
        size = len(path.encode("utf-8", errors="surrogateescape"))
    except UnicodeEncodeError:
        raise ValueError(f"{path[:100]!r}: not valid Unicode text") from None
    if size > MAX_PATH_BYTES:
        raise ValueError(f"{path[:100]!r}...: longer than {MAX_PATH_BYTES} bytes")
    if path.startswith("/"):
        raise ValueError(f"{path!r}: must be relative to the repository directory")
    if ".." in path.split("/"):
        raise ValueError(f"{path!r}: must not contain '..'")
    return path


def check_revision(revision: str) -> str:
    """One revision token that git cannot read as an option, or ``ValueError``."""
    if not revision:
        raise ValueError("revision is empty")
    if len(revision) > MAX_REVISION_CHARS:
        raise ValueError(f"revision is longer than {MAX_REVISION_CHARS} characters")
    if revision.startswith("-"):
        raise ValueError(f"{revision!r}: a revision must not start with '-'")
    if any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in revision):
        raise ValueError(
            f"{revision!r}: a revision must not contain whitespace or control characters"
        )
    try:
        revision.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{revision!r}: not valid Unicode text") from None
    return revision


class _GitOptions(ToolArgs):
    operation: str = Field(description="The git operation.")
    paths: list[str] | None = Field(
        default=None,
        max_length=MAX_PATHS,
        description=(
            "Literal paths relative to the repository directory (no absolute paths, no '..'). "
            "status, diff, log, show: optional filter; add: required, the paths to stage."
        ),
    )
    revision: str | None = Field(
        default=None,
        description=(
            "A revision (commit, branch, tag, range such as main..HEAD) for diff, log and show; "
            "log and show default to HEAD. Must not start with '-' or contain whitespace."
        ),
    )
    staged: bool = Field(
        default=False, description="diff only: compare the index (staged changes) instead."
    )
    message: str | None = Field(
        default=None,
        max_length=MAX_MESSAGE_CHARS,
        description="commit only, required: the commit message.",
    )
    max_count: int = Field(
        default=DEFAULT_MAX_COUNT,
        ge=MIN_COUNT,
        le=MAX_COUNT,
        description="log only: how many commits, 1-100.",
    )

    @field_validator("paths")
    @classmethod
    def _literal_relative_paths(cls, paths: list[str] | None) -> list[str] | None:
        if not paths:
            return None
        problems = []
        for path in paths:
            try:
                check_path(path)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise ValueError("; ".join(problems))
        return paths

    @field_validator("revision")
    @classmethod
    def _no_option(cls, revision: str | None) -> str | None:
        return None if revision is None else check_revision(revision)

    @field_validator("message")
    @classmethod
    def _nonblank(cls, message: str | None) -> str | None:
        if message is None:
            return None
        if not message.strip():
            raise ValueError("message is blank")
        if "\x00" in message:
            raise ValueError("message contains a NUL byte")
        return message

    @model_validator(mode="after")
    def _supported_combination(self) -> _GitOptions:
        given = {
            "paths": self.paths is not None,
            "revision": self.revision is not None,
            "staged": self.staged,
            "message": self.message is not None,
            "max_count": self.max_count != DEFAULT_MAX_COUNT,
        }
        supported = SUPPORTED[self.operation]
        problems = [
            (name, f"{self.operation} does not take {name}")
            for name, present in given.items()
            if present and name not in supported
        ]
        required = REQUIRED.get(self.operation)
        if required is not None and not given[required]:
            problems.append((required, f"{self.operation} needs {required}"))
        if problems:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError("git_options", message),
                        loc=(name,),
                        input=getattr(self, name),
                    )
                    for name, message in problems
                ],
            )
        return self

    @property
    def writes(self) -> bool:
        return self.operation in WRITE_OPERATIONS


class GitArgs(_GitOptions):
    """git(operation, paths, revision, staged, message, max_count), with writes enabled."""

    operation: Operation = Field(description="status, diff, log, show, add or commit.")


class GitReadArgs(_GitOptions):
    """The same tool when the deployment allows no writes: add and commit do not exist."""

    operation: ReadOperation = Field(description="status, diff, log or show.")


GitCall = GitArgs | GitReadArgs


def git_capabilities(args: GitCall) -> tuple[str, ...]:
    """``process.execute`` plus ``git.write`` for add/commit, ``git.read`` for the rest."""
    return ("process.execute", "git.write" if args.writes else "git.read")
