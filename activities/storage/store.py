"""The ``Storage`` contract the tools use, and its in-memory implementation.

A ``Storage`` owns one namespace of keys mapped to compact JSON text. It is synchronous: the tools
call it from a thread, never on the event loop. Every write is atomic and checks, inside the same
critical section, that it does not grow the namespace past its quota and, when asked, that the
current value is the one a human approved, so concurrent writers lose nothing and never overshoot
a limit.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from toolcalls.activities.storage.values import digest, entry_bytes, store_bytes


@dataclass(frozen=True)
class Quota:
    """Limits a write must not grow the namespace past."""

    max_keys: int
    max_store_bytes: int


@dataclass(frozen=True)
class Usage:
    """How many keys a namespace holds and the size of its JSON object."""

    keys: int
    bytes: int


@dataclass(frozen=True)
class Expected:
    """What a write was approved against: the current value's ``digest`` (``None``: absent)."""

    digest: str | None


@dataclass(frozen=True)
class KeyPage:
    keys: list[str]
    more: bool
    """Whether keys with the prefix follow this page."""


@dataclass(frozen=True)
class Written:
    created: bool
    usage: Usage
    """The namespace after the write."""


class StorageError(Exception):
    """A storage operation failed; nothing was changed."""


class QuotaExceeded(StorageError):
    """The write would grow the namespace past a limit."""


class ValueChanged(StorageError):
    """The current value is not the one the write expected."""


class StorageBusy(StorageError):
    """Another writer held the store for longer than the busy timeout."""


class StorageUnavailable(StorageError):
    """The backing store cannot be opened or used as configured."""


class Storage(Protocol):
    """One namespace of keys mapped to compact JSON text."""

    @property
    def namespace(self) -> str: ...

    def get(self, key: str) -> str | None:
        """The stored text, or ``None`` for a missing key."""
        ...

    def keys(self, prefix: str, offset: int, limit: int) -> KeyPage:
        """Keys starting with ``prefix`` (literally), sorted by code point, from ``offset``."""
        ...

    def usage(self) -> Usage: ...

    def put(self, key: str, text: str, quota: Quota, expected: Expected | None = None) -> Written:
        """Store ``text`` under ``key``.

        Raises:
            QuotaExceeded: the write would take the key count or size past ``quota`` (a write
                that does not grow an exceeded measure is allowed).
            ValueChanged: ``expected`` is given and the current value does not match it.
        """
        ...

    def delete(self, key: str, expected: Expected | None = None) -> bool:
        """Remove ``key``; whether it existed (deleting an absent key is a no-op)."""
        ...

    def close(self) -> None: ...


def check_quota(quota: Quota, before: Usage, key: str, old: str | None, new: str) -> Usage:
    """The usage after replacing ``old`` (``None``: absent) by ``new``; raise if over quota."""
    entries = before.bytes - store_bytes(before.keys, 0)
    count = before.keys + (old is None)
    entries += entry_bytes(key, new) - (0 if old is None else entry_bytes(key, old))
    after = Usage(keys=count, bytes=store_bytes(count, entries))
    if after.keys > quota.max_keys and after.keys > before.keys:
        raise QuotaExceeded(
            f"the namespace holds {before.keys} keys; the limit is {quota.max_keys}"
        )
    if after.bytes > quota.max_store_bytes and after.bytes > before.bytes:
        raise QuotaExceeded(
            f"the namespace would grow to {after.bytes} bytes; the limit is {quota.max_store_bytes}"
        )
    return after


def check_expected(expected: Expected | None, current: str | None) -> None:
    if expected is not None and digest(current) != expected.digest:
        raise ValueChanged("the stored value changed since it was approved")


class InMemoryStorage:
    """A namespace in this process's memory: lost with the worker, never shared between workers.

    Values are kept as text, so every read parses a fresh copy.
    """

    def __init__(self, namespace: str = "tool-values") -> None:
        self._namespace = namespace
        self._values: dict[str, str] = {}
        self._entries = 0
        self._lock = threading.Lock()

    @property
    def namespace(self) -> str:
        return self._namespace

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._values.get(key)

    def keys(self, prefix: str, offset: int, limit: int) -> KeyPage:
        with self._lock:
            matching = sorted(key for key in self._values if key.startswith(prefix))
        return KeyPage(matching[offset : offset + limit], more=len(matching) > offset + limit)

    def usage(self) -> Usage:
        with self._lock:
            return self._usage()

    def _usage(self) -> Usage:
        return Usage(len(self._values), store_bytes(len(self._values), self._entries))

    def put(self, key: str, text: str, quota: Quota, expected: Expected | None = None) -> Written:
        with self._lock:
            old = self._values.get(key)
            check_expected(expected, old)
            after = check_quota(quota, self._usage(), key, old, text)
            self._entries += entry_bytes(key, text) - (0 if old is None else entry_bytes(key, old))
            self._values[key] = text
            return Written(created=old is None, usage=after)

    def delete(self, key: str, expected: Expected | None = None) -> bool:
        with self._lock:
            old = self._values.get(key)
            check_expected(expected, old)
            if old is None:
                return False
            del self._values[key]
            self._entries -= entry_bytes(key, old)
            return True

    def close(self) -> None:
        """Nothing to release."""
