"""Both storages against a dict model, driven by Hypothesis through random operation sequences.

The model is a plain ``dict`` and the quota rule restated: a write must not grow the key count or
the namespace's JSON size past its limit. Small limits make the quota matter often.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from toolcalls.activities.storage import InMemoryStorage, SQLiteStorage, Storage
from toolcalls.activities.storage.store import Expected, Quota, QuotaExceeded, ValueChanged
from toolcalls.activities.storage.values import digest, encode_value

QUOTA = Quota(max_keys=6, max_store_bytes=220)
BULKY = encode_value("x" * 60)

keys = st.sampled_from(["a", "ab", "b", "a/b", "é", "x y", "'; DROP TABLE kv;--", "a\x00"]) | (
    st.text(min_size=1, max_size=4).filter(str.strip)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def object_bytes(model: dict[str, str]) -> int:
    decoded = {key: json.loads(text) for key, text in model.items()}
    return len(json.dumps(decoded, ensure_ascii=False, separators=(",", ":")).encode())


class StorageMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, str] = {}
        self.store = self.open()

    def open(self) -> Storage:
        raise NotImplementedError

    @rule(key=keys, value=json_values)
    def put(self, key: str, value: Any) -> None:
        text = encode_value(value)
        after = {**self.model, key: text}
        grows_keys = len(after) > QUOTA.max_keys and len(after) > len(self.model)
        size, before = object_bytes(after), object_bytes(self.model)
        grows_bytes = size > QUOTA.max_store_bytes and size > before
        try:
            written = self.store.put(key, text, QUOTA)
        except QuotaExceeded:
            assert grows_keys or grows_bytes
            return
        assert not grows_keys
        assert not grows_bytes
        assert written.created == (key not in self.model)
        self.model = after
        assert (written.usage.keys, written.usage.bytes) == (len(after), size)

    @rule(key=keys, stale=st.booleans())
    def put_expecting(self, key: str, stale: bool) -> None:
        current = self.model.get(key)
        expected = Expected(digest("stale") if stale else digest(current))
        # A roomy quota here lets the namespace go past QUOTA, so that ``put`` meets a namespace
        # already over its limits, which it may shrink but not grow.
        try:
            self.store.put(key, BULKY, Quota(1_000, 1 << 20), expected)
        except ValueChanged:
            assert stale
            return
        assert not stale
        self.model[key] = BULKY

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def replace_with_less(self, data: st.DataObject) -> None:
        """Replace a stored key's value with the smallest value there is."""
        self.put(data.draw(st.sampled_from(sorted(self.model))), None)

    @rule(key=keys)
    def delete(self, key: str) -> None:
        assert self.store.delete(key) == (key in self.model)
        self.model.pop(key, None)

    @rule(key=keys)
    def get(self, key: str) -> None:
        assert self.store.get(key) == self.model.get(key)

    @rule(prefix=st.sampled_from(["", "a", "a/", "x", "'", "é"]), offset=st.integers(0, 8),
          limit=st.integers(1, 4))  # fmt: skip
    def list_keys(self, prefix: str, offset: int, limit: int) -> None:
        matching = sorted(key for key in self.model if key.startswith(prefix))
        page = self.store.keys(prefix, offset, limit)
        assert page.keys == matching[offset : offset + limit]
        assert page.more == (len(matching) > offset + limit)

    @invariant()
    def usage_matches(self) -> None:
        usage = self.store.usage()
        assert (usage.keys, usage.bytes) == (len(self.model), object_bytes(self.model))


class InMemoryMachine(StorageMachine):
    def open(self) -> Storage:
        return InMemoryStorage()


class SQLiteMachine(StorageMachine):
    def open(self) -> Storage:
        self.dir = Path(tempfile.mkdtemp(prefix="storage-machine-"))
        return SQLiteStorage(self.dir / "kv.db")

    @precondition(lambda self: self.model)
    @rule()
    def reopen(self) -> None:
        """A new instance on the same file sees exactly the model."""
        self.store.close()
        self.store = SQLiteStorage(self.dir / "kv.db")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)


machine_settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestInMemoryStorage = InMemoryMachine.TestCase
TestInMemoryStorage.settings = machine_settings
TestSQLiteStorage = SQLiteMachine.TestCase
TestSQLiteStorage.settings = machine_settings
