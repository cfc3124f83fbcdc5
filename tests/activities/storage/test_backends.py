"""The ``Storage`` contract, the same for ``InMemoryStorage`` and ``SQLiteStorage``.

Real SQLite files in ``tmp_path``; concurrency with real threads, each SQLite writer on its own
instance (its own connections), as separate worker processes would be.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest

from toolcalls.activities.storage import Storage
from toolcalls.activities.storage.store import Expected, Quota, QuotaExceeded, ValueChanged
from toolcalls.activities.storage.values import digest, encode_value

ROOMY = Quota(max_keys=1_000_000, max_store_bytes=1 << 40)
MakeStorage = Callable[..., Storage]
"""The folder's ``make_storage`` fixture."""


def json_object_bytes(values: dict[str, str]) -> int:
    """The size of the namespace as one compact JSON object, computed independently."""
    decoded = {key: json.loads(text) for key, text in values.items()}
    return len(json.dumps(decoded, ensure_ascii=False, separators=(",", ":")).encode())


def test_get_put_delete(make_storage: MakeStorage) -> None:
    store = make_storage()
    assert store.get("k") is None
    assert store.put("k", "1", ROOMY).created
    assert store.get("k") == "1"
    assert not store.put("k", "null", ROOMY).created
    assert store.get("k") == "null"
    assert store.delete("k") is True
    assert store.get("k") is None
    assert store.delete("k") is False


def test_injection_key_is_stored_literally(make_storage: MakeStorage) -> None:
    store = make_storage()
    key = "'; DROP TABLE kv;--"
    store.put(key, '"x"', ROOMY)
    store.put("other", "2", ROOMY)
    assert store.get(key) == '"x"'
    assert store.keys("", 0, 10).keys == sorted([key, "other"])
    assert store.keys("'; DROP", 0, 10).keys == [key]


def test_keys_sort_by_code_point_and_filter_by_literal_prefix(make_storage: MakeStorage) -> None:
    store = make_storage()
    keys = ["b", "a", "A", "a%", "a_b", "ab", "a*", "a\x00z", "é", "\U0001f600", "a", "aB", "a.b"]
    for key in keys:
        store.put(key, "0", ROOMY)
    assert store.keys("", 0, 100).keys == sorted(set(keys))
    # Wildcards of LIKE and GLOB, case and NUL are literal characters.
    assert store.keys("a%", 0, 100).keys == ["a%"]
    assert store.keys("a_", 0, 100).keys == ["a_b"]
    assert store.keys("a*", 0, 100).keys == ["a*"]
    assert store.keys("a\x00", 0, 100).keys == ["a\x00z"]
    assert store.keys("A", 0, 100).keys == ["A"]
    assert store.keys("a", 0, 100).keys == sorted(k for k in set(keys) if k.startswith("a"))
    assert store.keys("zz", 0, 100).keys == []


def test_keys_page_with_offsets(make_storage: MakeStorage) -> None:
    store = make_storage()
    names = [f"k{i:02d}" for i in range(25)]
    for name in reversed(names):
        store.put(name, "1", ROOMY)
    store.put("other", "1", ROOMY)
    pages = [store.keys("k", offset, 10) for offset in (0, 10, 20, 25, 99)]
    assert [page.keys for page in pages] == [names[:10], names[10:20], names[20:], [], []]
    assert [page.more for page in pages] == [True, True, False, False, False]


def test_an_early_stopped_listing_leaves_the_storage_writable(make_storage: MakeStorage) -> None:
    store = make_storage()
    for i in range(5):
        store.put(f"k{i}", "1", ROOMY)
    assert store.keys("", 0, 2).more
    store.put("k9", "2", ROOMY)
    assert store.delete("k0")
    assert store.keys("", 0, 10).keys == ["k1", "k2", "k3", "k4", "k9"]


def test_usage_is_the_size_of_the_namespace_as_one_json_object(make_storage: MakeStorage) -> None:
    store = make_storage()
    model: dict[str, str] = {}
    assert store.usage().bytes == json_object_bytes(model) == 2
    for key, value in [("a", 1), ('quote"', "é\n"), ("tab\t", {"x": [1, 2.5]}), ("a", None)]:
        text = encode_value(value)
        written = store.put(key, text, ROOMY)
        model[key] = text
        assert written.usage.keys == len(model)
        assert written.usage.bytes == json_object_bytes(model)
    store.delete("a")
    del model["a"]
    assert store.usage().bytes == json_object_bytes(model)
    assert store.usage().keys == len(model)


def test_max_keys_is_exact(make_storage: MakeStorage) -> None:
    store = make_storage()
    quota = Quota(max_keys=3, max_store_bytes=1 << 20)
    for key in "abc":
        store.put(key, "1", quota)
    with pytest.raises(QuotaExceeded, match="holds 3 keys; the limit is 3"):
        store.put("d", "1", quota)
    assert store.get("d") is None
    store.put("a", "2", quota)  # replacing is not growing
    store.delete("b")
    store.put("d", "1", quota)
    assert store.keys("", 0, 10).keys == ["a", "c", "d"]


def test_max_store_bytes_is_exact(make_storage: MakeStorage) -> None:
    store = make_storage()
    store.put("a", encode_value("x" * 10), ROOMY)
    full = json_object_bytes({"a": encode_value("x" * 10), "b": encode_value("y" * 20)})
    with pytest.raises(QuotaExceeded, match=f"grow to {full} bytes; the limit is {full - 1}"):
        store.put("b", encode_value("y" * 20), Quota(10, full - 1))
    assert store.get("b") is None
    assert store.put("b", encode_value("y" * 20), Quota(10, full)).usage.bytes == full
    with pytest.raises(QuotaExceeded):
        store.put("b", encode_value("y" * 21), Quota(10, full))
    assert store.get("b") == encode_value("y" * 20)


def test_a_lowered_limit_still_lets_the_namespace_shrink(make_storage: MakeStorage) -> None:
    store = make_storage()
    for key in "abcd":
        store.put(key, encode_value("x" * 50), ROOMY)
    tight = Quota(max_keys=2, max_store_bytes=100)
    store.put("a", encode_value("x" * 10), tight)  # smaller, though still over both limits
    with pytest.raises(QuotaExceeded):
        store.put("a", encode_value("x" * 11), tight)
    with pytest.raises(QuotaExceeded):
        store.put("e", "1", tight)
    assert store.delete("b")


def test_expected_value_is_checked_with_the_write(make_storage: MakeStorage) -> None:
    store = make_storage()
    store.put("k", "1", ROOMY, Expected(digest=None))
    with pytest.raises(ValueChanged):
        store.put("k", "2", ROOMY, Expected(digest=None))
    with pytest.raises(ValueChanged):
        store.delete("k", Expected(digest=digest("2")))
    assert store.get("k") == "1"
    store.put("k", "2", ROOMY, Expected(digest=digest("1")))
    assert store.delete("k", Expected(digest=digest("2")))
    assert store.delete("k", Expected(digest=None)) is False


def test_concurrent_writers_lose_nothing(make_storage: MakeStorage) -> None:
    writers, writes = 6, 40
    stores = [make_storage() for _ in range(writers)]
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def write(n: int) -> None:
        try:
            start.wait()
            for i in range(writes):
                stores[n].put(f"w{n}/{i:03d}", encode_value({"n": n, "i": i}), ROOMY)
                stores[n].put(f"last/{i % 3}", encode_value(n), ROOMY)
                if i % 4 == 3:
                    stores[n].delete(f"w{n}/{i - 1:03d}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    model = {
        f"w{n}/{i:03d}": encode_value({"n": n, "i": i})
        for n in range(writers)
        for i in range(writes)
        if i % 4 != 2
    }
    reader = make_storage()
    listed = reader.keys("w", 0, 1000).keys
    assert listed == sorted(model)
    assert {key: reader.get(key) for key in listed} == model
    assert all(json.loads(reader.get(f"last/{i}") or "") in range(writers) for i in range(3))
    assert reader.usage().keys == len(model) + 3


def test_concurrent_writers_never_overshoot_the_quota(make_storage: MakeStorage) -> None:
    writers, attempts, limit = 6, 15, 40
    quota = Quota(max_keys=limit, max_store_bytes=1 << 20)
    stores = [make_storage() for _ in range(writers)]
    refused = [0] * writers
    start = threading.Barrier(writers)

    def write(n: int) -> None:
        start.wait()
        for i in range(attempts):
            try:
                stores[n].put(f"{n}-{i}", "1", quota)
            except QuotaExceeded:
                refused[n] += 1

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert make_storage().usage().keys == limit
    assert sum(refused) == writers * attempts - limit
