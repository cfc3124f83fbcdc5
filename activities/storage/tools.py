"""``get_value``, ``list_keys``, ``set_value`` and ``delete_value`` over one storage namespace.

The tools touch one namespace of one ``Storage`` and nothing else; the model names keys, never
namespaces, files or SQL. Writes exist only with ``storage.allow_write``. Arguments are checked at
plan time (keys, JSON data, depth, an absolute size ceiling); the deployment's value size and
namespace quotas are checked again at execution, inside the write's transaction. An approved write
is bound to the value its preview showed: if the key changed in between, the write is refused.
Storage work runs in a thread, never on the worker's event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, Field, JsonValue, field_validator

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.storage.settings import MAX_VALUE_BYTES_CEILING, StorageSettings
from toolcalls.activities.storage.store import (
    Expected,
    Quota,
    QuotaExceeded,
    Storage,
    StorageBusy,
    StorageError,
    StorageUnavailable,
    Usage,
    ValueChanged,
    check_quota,
)
from toolcalls.activities.storage.values import (
    MAX_KEY_CHARS,
    JsonText,
    ValueProblem,
    check_key,
    check_prefix,
    decode_value,
    digest,
    encode_value,
    value_bytes,
)
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode

DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 1_000
"""``list_keys`` limit is 1-1,000 (spec)."""
MAX_LIST_BYTES = 524_288
"""A page's keys as JSON; 1,000 keys of 256 escaped control characters would pass 1 MiB."""
PREVIEW_VALUE_CHARS = 4_096
"""How much of the value a write replaces or deletes its approval preview shows."""

_T = TypeVar("_T")


Key = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_KEY_CHARS,
        description="Nonblank key of at most 256 characters, used literally.",
    ),
    AfterValidator(check_key),
]


class GetValueArgs(ToolArgs):
    key: Key


class ListKeysArgs(ToolArgs):
    prefix: Annotated[str, AfterValidator(check_prefix)] = Field(
        default="",
        max_length=MAX_KEY_CHARS,
        description="Only keys starting with this literal text (no wildcards).",
    )
    offset: int = Field(default=0, ge=0, description="Keys to skip, from next_offset.")
    limit: int = Field(default=DEFAULT_LIST_LIMIT, ge=1, le=MAX_LIST_LIMIT, description="1-1000.")


class SetValueArgs(ToolArgs):
    key: Key
    value: JsonText = Field(
        description=(
            'The value as JSON text: {"a": 1}, [1, 2], 42, true, null, or "text" for a string '
            "(quotes included)."
        )
    )

    @field_validator("value")
    @classmethod
    def _bounded(cls, value: JsonValue) -> JsonValue:
        # JsonText has already refused anything but JSON data at most 64 levels deep.
        size = value_bytes(encode_value(value))
        if size > MAX_VALUE_BYTES_CEILING:
            raise ValueProblem(f"value is {size} bytes; the limit is {MAX_VALUE_BYTES_CEILING}")
        return value


class DeleteValueArgs(ToolArgs):
    key: Key


class GetValueResult(ToolResult):
    key: str
    found: bool
    value: JsonValue = None
    """``None`` both for a missing key and for a stored JSON null; ``found`` tells them apart."""


class ListKeysResult(ToolResult):
    keys: list[str]
    next_offset: int | None
    """The ``offset`` of the next page; ``None`` when no keys with the prefix follow."""


class SetValueResult(ToolResult):
    key: str
    created: bool
    value_bytes: int
    keys: int
    """Keys in the namespace after the write."""
    store_bytes: int
    """Size of the namespace after the write."""


class DeleteValueResult(ToolResult):
    key: str
    deleted: bool
    """False when the key was absent (a no-op)."""


class StorageTools:
    """The storage tools of one deployment: one namespace, its limits, read-only by default."""

    def __init__(self, settings: StorageSettings, storage: Storage) -> None:
        if storage.namespace != settings.namespace:
            raise ValueError(
                f"storage namespace {storage.namespace!r} is not the configured "
                f"{settings.namespace!r}"
            )
        self.settings = settings
        self.storage = storage
        self._quota = Quota(max_keys=settings.max_keys, max_store_bytes=settings.max_store_bytes)

    async def get_value(self, args: GetValueArgs, call: CallContext) -> GetValueResult:
        """The value under ``key``; ``found=False`` for a missing key."""
        found, value = await self._run("get_value", args.key, self._load, args.key)
        return GetValueResult(key=args.key, found=found, value=value)

    async def list_keys(self, args: ListKeysArgs, call: CallContext) -> ListKeysResult:
        """A page of sorted keys with the prefix, and where the next page starts."""
        page = await self._run(
            "list_keys", args.prefix, self.storage.keys, args.prefix, args.offset, args.limit
        )
        keys: list[str] = []
        size = 0
        for key in page.keys:
            size += len(json.dumps(key)) + 1
            if size > MAX_LIST_BYTES:
                break
            keys.append(key)
        more = page.more or len(keys) < len(page.keys)
        return ListKeysResult(keys=keys, next_offset=args.offset + len(keys) if more else None)

    async def prepare_set_value(self, args: SetValueArgs, call: CallContext) -> Prepared:
        """Preview: the value the write replaces and the namespace's size after it."""
        self._writable("set_value")
        text = self._encoded(args)
        current, usage = await self._run("set_value", args.key, self._snapshot, args.key)
        try:
            after = check_quota(self._quota, usage, args.key, current, text)
        except QuotaExceeded as exc:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED, f"set_value: {_show(args.key)}: {exc}"
            ) from None
        verb = "replace" if current is not None else "create"
        return self._prepared(
            f"{verb} {_show(args.key)} in namespace {self.storage.namespace!r}",
            args.key,
            current,
            {
                "new_bytes": value_bytes(text),
                "keys_after": after.keys,
                "store_bytes_after": after.bytes,
            },
        )

    async def set_value(self, args: SetValueArgs, call: CallContext) -> SetValueResult:
        """Store ``value`` under ``key``, within the value size and namespace limits."""
        self._writable("set_value")
        text = self._encoded(args)
        expected = self._expected("set_value", args.key, call)
        async with Heartbeat(key=args.key):
            written = await self._run(
                "set_value", args.key, self.storage.put, args.key, text, self._quota, expected
            )
        return SetValueResult(
            key=args.key,
            created=written.created,
            value_bytes=value_bytes(text),
            keys=written.usage.keys,
            store_bytes=written.usage.bytes,
        )

    async def prepare_delete_value(self, args: DeleteValueArgs, call: CallContext) -> Prepared:
        """Preview: the value the delete removes, or that there is none."""
        self._writable("delete_value")
        current = await self._run("delete_value", args.key, self.storage.get, args.key)
        what = "delete" if current is not None else "nothing to delete:"
        absent = "" if current is not None else " is absent"
        return self._prepared(
            f"{what} {_show(args.key)}{absent} in namespace {self.storage.namespace!r}",
            args.key,
            current,
            {},
        )

    async def delete_value(self, args: DeleteValueArgs, call: CallContext) -> DeleteValueResult:
        """Remove ``key``; deleting an absent key is a no-op."""
        self._writable("delete_value")
        expected = self._expected("delete_value", args.key, call)
        async with Heartbeat(key=args.key):
            deleted = await self._run(
                "delete_value", args.key, self.storage.delete, args.key, expected
            )
        return DeleteValueResult(key=args.key, deleted=deleted)

    def _load(self, key: str) -> tuple[bool, JsonValue]:
        """Read and parse in one thread: a value of 200 KB takes a while to parse."""
        text = self.storage.get(key)
        if text is None:
            return False, None
        return True, self._decoded("get_value", key, text)

    def _snapshot(self, key: str) -> tuple[str | None, Usage]:
        return self.storage.get(key), self.storage.usage()

    def _writable(self, tool: str) -> None:
        if not self.settings.allow_write:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"{tool}: storage.allow_write is false: this deployment's storage is read-only",
            )

    def _encoded(self, args: SetValueArgs) -> str:
        text = encode_value(args.value)
        size = value_bytes(text)
        if size > self.settings.max_value_bytes:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"set_value: {_show(args.key)}: value is {size} bytes; "
                f"the limit is {self.settings.max_value_bytes}",
                fixable_args=["value"],
            )
        return text

    def _decoded(self, tool: str, key: str, text: str) -> JsonValue:
        size = value_bytes(text)
        if size > MAX_VALUE_BYTES_CEILING:
            raise tool_error(
                ErrorCode.OUTPUT_TOO_LARGE,
                f"{tool}: {_show(key)}: stored value is {size} bytes; "
                f"the limit is {MAX_VALUE_BYTES_CEILING}",
            )
        try:
            value: JsonValue = decode_value(text)
        except ValueProblem as exc:
            raise tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {_show(key)}: {exc}") from None
        return value

    def _expected(self, tool: str, key: str, call: CallContext) -> Expected | None:
        """The approved value the write is bound to; ``None`` when it ran without approval."""
        held = call.precondition
        if held is None:
            return None
        if held.get("namespace") != self.storage.namespace or held.get("key") != key:
            raise tool_error(
                ErrorCode.PRECONDITION_FAILED,
                f"{tool}: {_show(key)}: the approval was for another key or namespace",
            )
        return Expected(digest=held.get("digest"))

    def _prepared(
        self, title: str, key: str, current: str | None, extra: dict[str, Any]
    ) -> Prepared:
        text = None
        if current is not None:
            shown = current[:PREVIEW_VALUE_CHARS]
            cut = len(current) - len(shown)
            text = shown + (f"\n... ({cut} more characters)" if cut else "")
        data = {
            "namespace": self.storage.namespace,
            "key": key,
            "exists": current is not None,
            "current_bytes": value_bytes(current) if current is not None else None,
            **extra,
        }
        return Prepared(
            preview=[PreviewArtifact(kind="storage", title=title, text=text, data=data)],
            precondition={
                "namespace": self.storage.namespace,
                "key": key,
                "digest": digest(current),
            },
        )

    async def _run(self, tool: str, key: str, fn: Callable[..., _T], *args: Any) -> _T:
        with _storage_errors(tool, key):
            return await _in_thread(fn, *args)


async def _in_thread(fn: Callable[..., _T], *args: Any) -> _T:
    """Run ``fn`` in a thread; on cancellation, wait for it and report what really happened.

    A storage operation is one short transaction that cannot be stopped half-way: abandoning the
    thread would report a write as canceled that commits a moment later.
    """
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            continue


@contextmanager
def _storage_errors(tool: str, key: str) -> Iterator[None]:
    """The one boundary where storage failures become tool errors."""
    where = f"{tool}: {_show(key)}" if key else tool
    try:
        yield
    except ValueChanged as exc:
        raise tool_error(ErrorCode.PRECONDITION_FAILED, f"{where}: {exc}") from None
    except QuotaExceeded as exc:
        raise tool_error(ErrorCode.EXECUTION_FAILED, f"{where}: {exc}") from None
    except StorageBusy as exc:
        raise tool_error(
            ErrorCode.EXECUTION_FAILED, f"{where}: {exc}; nothing was changed", retryable=True
        ) from None
    except StorageUnavailable as exc:
        raise tool_error(ErrorCode.CONFIGURATION_ERROR, f"{where}: {exc}") from None
    except StorageError as exc:
        raise tool_error(ErrorCode.EXECUTION_FAILED, f"{where}: {exc}") from None


def _show(key: str) -> str:
    """A key as messages quote it: repr, cut to a readable length."""
    return repr(key) if len(key) <= 60 else repr(key[:57]) + "..."
