"""``StorageTools`` called directly, for both storages: results, limits, previews, failures.

Write tools heartbeat, so they run in ``ActivityEnvironment`` (a real activity context).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from toolcalls.activities.base import CallContext
from toolcalls.activities.storage import InMemoryStorage, SQLiteStorage, Storage, StorageTools
from toolcalls.activities.storage.settings import MAX_VALUE_BYTES_CEILING, StorageSettings
from toolcalls.activities.storage.store import Quota
from toolcalls.activities.storage.tools import (
    MAX_LIST_BYTES,
    DeleteValueArgs,
    GetValueArgs,
    ListKeysArgs,
    SetValueArgs,
)
from toolcalls.activities.storage.values import digest
from toolcalls.workflows.models.call import ErrorCode

CALL = CallContext("wf", "call", "wf:call", None, None)
MakeTools = Callable[..., StorageTools]


def approved(precondition: dict[str, Any] | None) -> CallContext:
    return CallContext("wf", "call", "wf:call", None, precondition)


@pytest.fixture
def make(make_storage: Callable[[str], Storage]) -> MakeTools:
    """A factory of tools with the given settings (writes allowed), over each kind of storage."""

    def factory(**settings: Any) -> StorageTools:
        config = StorageSettings.model_validate({"allow_write": True, **settings})
        return StorageTools(config, make_storage(config.namespace))

    return factory


async def put(tools: StorageTools, key: str, value: Any, call: CallContext = CALL) -> Any:
    """``set_value`` of ``value``, given as the JSON text a model sends."""
    return await ActivityEnvironment().run(
        tools.set_value, SetValueArgs(key=key, value=json.dumps(value)), call
    )


async def delete(tools: StorageTools, key: str, call: CallContext = CALL) -> Any:
    return await ActivityEnvironment().run(tools.delete_value, DeleteValueArgs(key=key), call)


async def get(tools: StorageTools, key: str) -> Any:
    return await tools.get_value(GetValueArgs(key=key), CALL)


async def failure(call: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await call
    return caught.value


async def test_missing_key_and_stored_null_differ(make: MakeTools) -> None:
    tools = make()
    missing = await get(tools, "k")
    assert (missing.found, missing.value) == (False, None)
    await put(tools, "k", None)
    stored = await get(tools, "k")
    assert (stored.found, stored.value) == (True, None)


async def test_results_are_detached_copies(make: MakeTools) -> None:
    tools = make()
    sent = {"items": [1, 2], "nested": {"a": "b"}}
    args = SetValueArgs(key="k", value=sent)
    await ActivityEnvironment().run(tools.set_value, args, CALL)
    items = args.value["items"] if isinstance(args.value, dict) else None
    assert isinstance(items, list)
    items.append(3)  # the argument's object, after the write
    first = (await get(tools, "k")).value
    assert first == {"items": [1, 2], "nested": {"a": "b"}}
    assert isinstance(first, dict)
    nested = first["nested"]
    assert isinstance(nested, dict)
    nested["a"] = "changed"
    assert (await get(tools, "k")).value == {"items": [1, 2], "nested": {"a": "b"}}


async def test_set_reports_creation_and_the_namespace_size(make: MakeTools) -> None:
    tools = make()
    created = await put(tools, "a", {"x": "é"})
    assert (created.created, created.value_bytes, created.keys) == (True, 10, 1)
    assert created.store_bytes == len('{"a":{"x":"é"}}'.encode())
    replaced = await put(tools, "b", [1, 2.5, None])
    assert (replaced.created, replaced.keys) == (True, 2)
    assert replaced.store_bytes == len('{"a":{"x":"é"},"b":[1,2.5,null]}'.encode())
    assert not (await put(tools, "b", True)).created


async def test_delete_is_a_no_op_for_an_absent_key(make: MakeTools) -> None:
    tools = make()
    await put(tools, "k", 1)
    assert (await delete(tools, "k")).deleted is True
    assert (await delete(tools, "k")).deleted is False
    assert not (await get(tools, "k")).found


async def test_list_keys_pages_with_next_offset(make: MakeTools) -> None:
    tools = make()
    for key in ["b", "a/2", "a/1", "a/3", "c", "a/%"]:
        await put(tools, key, 0)
    pages = []
    offset: int | None = 0
    while offset is not None:
        page = await tools.list_keys(ListKeysArgs(prefix="a/", offset=offset, limit=2), CALL)
        pages.append(page.keys)
        offset = page.next_offset
    assert pages == [["a/%", "a/1"], ["a/2", "a/3"]]
    everything = await tools.list_keys(ListKeysArgs(), CALL)
    assert (everything.keys, everything.next_offset) == (
        ["a/%", "a/1", "a/2", "a/3", "b", "c"],
        None,
    )
    beyond = await tools.list_keys(ListKeysArgs(offset=50), CALL)
    assert (beyond.keys, beyond.next_offset) == ([], None)


async def test_a_page_of_long_escaped_keys_stays_under_its_byte_bound(make: MakeTools) -> None:
    tools = make()
    names = sorted("\x01" * 250 + f"{i:06d}" for i in range(500))
    for name in names:  # straight into the storage: quicker than 500 activity runs
        tools.storage.put(name, "0", Quota(max_keys=1000, max_store_bytes=4_000_000))
    first = await tools.list_keys(ListKeysArgs(limit=1000), CALL)
    size = len(first.model_dump_json())
    assert 0 < len(first.keys) < len(names)
    assert MAX_LIST_BYTES // 2 < size <= MAX_LIST_BYTES + 1_000
    assert first.next_offset == len(first.keys)
    rest = await tools.list_keys(ListKeysArgs(offset=first.next_offset, limit=1000), CALL)
    assert first.keys + rest.keys == names
    assert rest.next_offset is None


async def test_writes_need_allow_write(make: MakeTools) -> None:
    tools = make(allow_write=False)
    for attempt in (
        put(tools, "k", 1),
        delete(tools, "k"),
        tools.prepare_set_value(SetValueArgs(key="k", value=1), CALL),
        tools.prepare_delete_value(DeleteValueArgs(key="k"), CALL),
    ):
        error = await failure(attempt)
        assert error.type == ErrorCode.CONFIGURATION_ERROR
        assert "storage.allow_write is false" in error.message
    assert not (await get(tools, "k")).found


async def test_a_value_over_the_deployments_limit_is_the_models_to_fix(make: MakeTools) -> None:
    tools = make(max_value_bytes=100)
    assert (await put(tools, "k", "x" * 98)).value_bytes == 100
    error = await failure(put(tools, "k", "x" * 99))
    assert error.type == ErrorCode.INVALID_ARGUMENTS
    assert error.message == "set_value: 'k': value is 101 bytes; the limit is 100"
    assert error.details[0]["fixable_args"] == ["value"]
    assert (await get(tools, "k")).value == "x" * 98


async def test_quotas_fail_the_write_and_keep_the_store(make: MakeTools) -> None:
    tools = make(max_keys=2)
    await put(tools, "a", 1)
    await put(tools, "b", 2)
    error = await failure(put(tools, "c", 3))
    assert error.type == ErrorCode.EXECUTION_FAILED
    assert error.non_retryable
    assert error.message == "set_value: 'c': the namespace holds 2 keys; the limit is 2"
    prepared = await failure(tools.prepare_set_value(SetValueArgs(key="c", value=3), CALL))
    assert prepared.message == error.message
    small = make(max_store_bytes=20)
    error = await failure(put(small, "long", "x" * 30))
    assert "the limit is 20" in error.message


async def test_prepare_set_previews_the_value_it_replaces(make: MakeTools) -> None:
    tools = make()
    fresh = await tools.prepare_set_value(SetValueArgs(key="k", value=[1]), CALL)
    assert fresh.precondition == {"namespace": "tool-values", "key": "k", "digest": None}
    [artifact] = fresh.preview
    assert artifact.title == "create 'k' in namespace 'tool-values'"
    assert artifact.text is None
    assert artifact.data == {
        "namespace": "tool-values",
        "key": "k",
        "exists": False,
        "current_bytes": None,
        "new_bytes": 3,
        "keys_after": 1,
        "store_bytes_after": len('{"k":[1]}'),
    }
    await put(tools, "k", "x" * 5000)
    replacing = await tools.prepare_set_value(SetValueArgs(key="k", value=[1]), CALL)
    [artifact] = replacing.preview
    assert artifact.title.startswith("replace 'k'")
    assert artifact.text is not None
    assert artifact.text.startswith('"xxx')
    assert artifact.text.endswith("(906 more characters)")
    assert replacing.precondition == {
        "namespace": "tool-values",
        "key": "k",
        "digest": digest(json.dumps("x" * 5000)),
    }


async def test_an_approved_write_is_bound_to_the_previewed_value(make: MakeTools) -> None:
    tools = make()
    await put(tools, "k", "old")
    prepared = await tools.prepare_set_value(SetValueArgs(key="k", value='"new"'), CALL)
    await put(tools, "k", "meanwhile")
    error = await failure(put(tools, "k", "new", approved(prepared.precondition)))
    assert error.type == ErrorCode.PRECONDITION_FAILED
    assert "changed since it was approved" in error.message
    assert (await get(tools, "k")).value == "meanwhile"
    again = await tools.prepare_set_value(SetValueArgs(key="k", value='"new"'), CALL)
    assert (await put(tools, "k", "new", approved(again.precondition))).created is False
    other = await failure(put(tools, "j", "new", approved(again.precondition)))
    assert other.type == ErrorCode.PRECONDITION_FAILED
    assert "another key" in other.message


async def test_an_approved_delete_is_bound_to_the_previewed_value(make: MakeTools) -> None:
    tools = make()
    absent = await tools.prepare_delete_value(DeleteValueArgs(key="k"), CALL)
    assert absent.preview[0].title == "nothing to delete: 'k' is absent in namespace 'tool-values'"
    await put(tools, "k", 1)
    error = await failure(delete(tools, "k", approved(absent.precondition)))
    assert error.type == ErrorCode.PRECONDITION_FAILED
    present = await tools.prepare_delete_value(DeleteValueArgs(key="k"), CALL)
    assert present.preview[0].text == "1"
    assert (await delete(tools, "k", approved(present.precondition))).deleted


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "nests deeper than 64"),
        ("NaN", "not JSON"),
        ("[1e400]", "non-finite"),
        ("{broken", "not JSON"),
    ],
)
async def test_values_no_tool_could_store_are_refused_on_read(
    tmp_path: Path, stored: str, problem: str
) -> None:
    path = tmp_path / "kv.db"
    tools = StorageTools(StorageSettings(), SQLiteStorage(path))
    assert not (await get(tools, "k")).found  # creates the table
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO kv VALUES ('tool-values', 'k', 0, ?)", (stored,))
    error = await failure(get(tools, "k"))
    assert error.type == ErrorCode.EXECUTION_FAILED
    assert error.message.startswith("get_value: 'k': stored")
    assert problem in error.message


async def test_an_oversized_stored_value_is_not_returned(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    tools = StorageTools(StorageSettings(), SQLiteStorage(path))
    await get(tools, "k")
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO kv VALUES ('tool-values', 'k', 0, ?)",
            (json.dumps("x" * MAX_VALUE_BYTES_CEILING),),
        )
    error = await failure(get(tools, "k"))
    assert error.type == ErrorCode.OUTPUT_TOO_LARGE


def test_the_storage_must_serve_the_configured_namespace() -> None:
    with pytest.raises(ValueError, match="'other' is not the configured 'tool-values'"):
        StorageTools(StorageSettings(), InMemoryStorage("other"))
