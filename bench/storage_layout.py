"""SQLite storage layouts: one JSON map per namespace, or one row per key?

    python -m bench.storage_layout [--keys N] [--value-bytes B] [--ops N]

Fills a namespace with ``--keys`` values of ``--value-bytes`` each in a fresh WAL database per
layout, then times, per operation: replacing one value, reading one, listing a page of 100 keys,
and replacing values from four threads at once (each with its own storage instance, as separate
worker processes would). ``SQLiteStorage`` is the row-per-key layout the tools use; ``MapStorage``
below is the layout the spec describes (every update loads and saves the namespace's map), with
the same contract and the same ``BEGIN IMMEDIATE`` transactions.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol

from toolcalls.activities.storage.sqlite import WRITE_BUSY_TIMEOUT_MS, SQLiteStorage
from toolcalls.activities.storage.store import (
    Expected,
    KeyPage,
    Quota,
    Usage,
    Written,
    check_expected,
    check_quota,
)
from toolcalls.activities.storage.values import entry_bytes, store_bytes

QUOTA = Quota(max_keys=1_000_000, max_store_bytes=1 << 40)


class _Layout(Protocol):
    def get(self, key: str) -> str | None: ...
    def keys(self, prefix: str, offset: int, limit: int) -> KeyPage: ...
    def put(
        self, key: str, text: str, quota: Quota, expected: Expected | None = None
    ) -> Written: ...
    def close(self) -> None: ...


class MapStorage:
    """One row per namespace holding the whole map as JSON text (the spec's layout)."""

    def __init__(self, path: Path, namespace: str = "tool-values") -> None:
        self.namespace = namespace
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout = {WRITE_BUSY_TIMEOUT_MS}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS kv_map (namespace TEXT PRIMARY KEY, doc TEXT NOT NULL)"
        )

    def _load(self) -> dict[str, str]:
        row = self._db.execute(
            "SELECT doc FROM kv_map WHERE namespace = ?", (self.namespace,)
        ).fetchone()
        if row is None:
            return {}
        # Values are kept as their JSON text, so a read returns the same text as the row layout.
        return {k: json.dumps(v, ensure_ascii=False) for k, v in json.loads(row[0]).items()}

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def keys(self, prefix: str, offset: int, limit: int) -> KeyPage:
        matching = sorted(k for k in self._load() if k.startswith(prefix))
        return KeyPage(matching[offset : offset + limit], more=len(matching) > offset + limit)

    def put(self, key: str, text: str, quota: Quota, expected: Expected | None = None) -> Written:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            values = self._load()
            old = values.get(key)
            check_expected(expected, old)
            entries = sum(entry_bytes(k, v) for k, v in values.items())
            before = Usage(len(values), store_bytes(len(values), entries))
            after = check_quota(quota, before, key, old, text)
            values[key] = text
            doc = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in values.items()) + "}"
            self._db.execute(
                "INSERT INTO kv_map VALUES (?, ?) ON CONFLICT (namespace) DO UPDATE SET doc = ?",
                (self.namespace, doc, doc),
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        return Written(created=old is None, usage=after)

    def close(self) -> None:
        self._db.close()


def per_op(fn: Callable[[int], object], ops: int) -> float:
    """Median microseconds per call of ``fn(i)``."""
    times = []
    for i in range(ops):
        started = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def value(i: int, size: int) -> str:
    """A distinct value of ``size`` bytes: SQLite skips writing a row rewritten unchanged."""
    return json.dumps(f"{i:08d}".ljust(size - 2, "x"))


def concurrent(make: Callable[[], _Layout], keys: int, size: int, ops: int) -> float:
    """Writes per second from four threads, each with its own storage instance."""
    stores = [make() for _ in range(4)]

    def writer(store: _Layout, n: int) -> None:
        for i in range(ops):
            store.put(f"key-{(n * ops + i) % keys:06d}", value(n * ops + i, size), QUOTA)

    threads = [threading.Thread(target=writer, args=(s, n)) for n, s in enumerate(stores)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    for store in stores:
        store.close()
    return 4 * ops / elapsed


def measure(name: str, make: Callable[[], _Layout], keys: int, size: int, ops: int) -> None:
    store = make()
    for i in range(keys):
        store.put(f"key-{i:06d}", value(i, size), QUOTA)
    put = per_op(lambda i: store.put(f"key-{i % keys:06d}", value(keys + i, size), QUOTA), ops)
    get = per_op(lambda i: store.get(f"key-{i % keys:06d}"), ops)
    page = per_op(lambda i: store.keys("key-", 0, 100), ops)
    store.close()
    rate = concurrent(make, keys, size, ops)
    print(
        f"{name:<12} put {put:9.0f} us   get {get:8.0f} us   list 100 {page:8.0f} us   "
        f"4 writers {rate:7.0f} puts/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--value-bytes", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for keys in (10, args.keys):
            print(f"{keys} keys of {args.value_bytes} bytes:")
            rows: Callable[[], _Layout] = partial(SQLiteStorage, Path(tmp, f"rows-{keys}.db"))
            whole: Callable[[], _Layout] = partial(MapStorage, Path(tmp, f"map-{keys}.db"))
            measure("row per key", rows, keys, args.value_bytes, args.ops)
            measure("map", whole, keys, args.value_bytes, args.ops)


if __name__ == "__main__":
    main()
