"""The storage tools through a real ``ToolCallWorkflow`` on a real server, over a SQLite file.

Reads run at once under the default ceiling; writes wait for an approval bound to the value the
preview showed. Parallel calls through two worker processes writing one file lose nothing.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
)
from tests.support.tools import ALL_TOOL_NAMES
from tests.worker.support import TOOLCALLS, Spawned, hermetic_env
from toolcalls.activities.storage import SQLiteStorage
from toolcalls.activities.storage.store import Quota
from toolcalls.activities.storage.values import encode_value
from toolcalls.worker.config import Config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallRequest, ToolCallResult

STORAGE_TOOLS = ["get_value", "list_keys", "set_value", "delete_value"]


def storage_config(task_queue: str, database: Path, **sections: Any) -> Config:
    storage = {"database": str(database), "allow_write": True, **sections.pop("storage", {})}
    return make_config(
        task_queue, tools=[*ALL_TOOL_NAMES, *STORAGE_TOOLS], storage=storage, **sections
    )


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


async def approve(client: Client, task_queue: str, tool: str, args: dict[str, Any]) -> Any:
    """Run a call that needs approval: check its preview, approve it, return its result."""
    handle = await start_call(client, task_queue, tool, args)
    pending = await pending_approval(handle)
    assert pending.capabilities == ["storage.write"]
    assert [artifact.kind for artifact in pending.preview] == ["storage"]
    await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
    result = await asyncio.wait_for(handle.result(), 30)
    return pending, result


async def test_reads_run_at_once_and_writes_after_an_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with running_worker(client, storage_config(task_queue, tmp_path / "kv.db")):
        missing = await run_call(client, task_queue, "get_value", {"key": "greeting"})
        assert missing.status is CallStatus.COMPLETED
        assert missing.approval is None
        assert missing.output == {"key": "greeting", "found": False, "value": None}
        pending, stored = await approve(
            # As a model sends it: the value's JSON text.
            client,
            task_queue,
            "set_value",
            {"key": "greeting", "value": '{"text": "hi"}'},
        )
        assert pending.preview[0].title == "create 'greeting' in namespace 'tool-values'"
        assert stored.status is CallStatus.COMPLETED
        assert stored.approval is not None
        assert stored.approval.approver == "alice"
        assert stored.output["created"] is True
        found = await run_call(client, task_queue, "get_value", {"key": "greeting"})
        assert found.output == {"key": "greeting", "found": True, "value": {"text": "hi"}}
        listed = await run_call(client, task_queue, "list_keys", {"prefix": "gr", "limit": None})
        assert listed.output == {"keys": ["greeting"], "next_offset": None}
        pending, deleted = await approve(client, task_queue, "delete_value", {"key": "greeting"})
        assert pending.preview[0].text == '{"text":"hi"}'
        assert deleted.output == {"key": "greeting", "deleted": True}
    assert SQLiteStorage(tmp_path / "kv.db").get("greeting") is None


async def test_every_tool_runs_without_approval_under_an_allowing_ceiling(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    config = storage_config(task_queue, tmp_path / "kv.db", ceiling={"default_effect": "allow"})
    async with running_worker(client, config):
        results = [
            await run_call(client, task_queue, "set_value", {"key": "n", "value": None}),
            await run_call(client, task_queue, "get_value", {"key": "n"}),
            await run_call(client, task_queue, "list_keys", {"offset": 0, "limit": 1}),
            await run_call(client, task_queue, "delete_value", {"key": "n"}),
            await run_call(client, task_queue, "delete_value", {"key": "n"}),
        ]
    assert [r.status for r in results] == [CallStatus.COMPLETED] * 5
    assert all(r.approval is None for r in results)
    assert [r.output for r in results[1:]] == [
        {"key": "n", "found": True, "value": None},
        {"keys": ["n"], "next_offset": None},
        {"key": "n", "deleted": True},
        {"key": "n", "deleted": False},
    ]


async def test_an_approved_write_fails_if_the_value_changed_after_the_preview(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    path = tmp_path / "kv.db"
    async with running_worker(client, storage_config(task_queue, path)):
        handle = await start_call(client, task_queue, "set_value", {"key": "k", "value": '"new"'})
        pending = await pending_approval(handle)
        other = SQLiteStorage(path)
        other.put("k", '"meanwhile"', Quota(max_keys=10, max_store_bytes=1000))
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.PRECONDITION_FAILED
    assert other.get("k") == '"meanwhile"'
    other.close()


async def test_a_value_over_the_limit_fails_before_anyone_is_asked(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    config = storage_config(task_queue, tmp_path / "kv.db", storage={"max_value_bytes": 50})
    async with running_worker(client, config):
        result = await run_call(
            client, task_queue, "set_value", {"key": "k", "value": json.dumps("x" * 60)}
        )
    assert result.status is CallStatus.FAILED
    assert result.approval is None
    assert result.error is not None
    assert (result.error.code, result.error.fixable_args) == (
        ErrorCode.INVALID_ARGUMENTS,
        ["value"],
    )
    assert result.error.message == "set_value: 'k': value is 62 bytes; the limit is 50"


async def test_parallel_writes_from_two_worker_processes_lose_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Calls alternate between this process's worker and a ``toolcalls worker`` process that
    serves ``set_value`` on a queue of its own; both write the same file at the same time."""
    path = tmp_path / "kv.db"
    other_queue = f"{task_queue}-storage"
    # Both workers keep their state, and so their attestation key, in one directory.
    state_dir = tmp_path / "state"
    other_config = tmp_path / "storage-worker.toml"
    other_config.write_text(
        f'task_queue = "{task_queue}"\ntools = ["set_value"]\nstate_dir = "{state_dir}"\n'
        f'[worker]\nqueue = "{other_queue}"\nserve_workflows = false\n'
        f'[activities.task_queues]\nset_value = "{other_queue}"\n'
        f'[storage]\ndatabase = "{path}"\nallow_write = true\n'
        '[ceiling]\ndefault_effect = "allow"\n'
    )
    address = client.service_client.config.target_host
    other = Spawned(
        [TOOLCALLS, "worker", "--config", str(other_config), "--address", address],
        hermetic_env(tmp_path),
        cwd=tmp_path,
    )
    try:
        await asyncio.to_thread(other.wait_for_line, "polling task queue", 60)
        config = storage_config(
            task_queue, path, ceiling={"default_effect": "allow"}, state_dir=str(state_dir)
        )
        model = {f"item/{i:02d}": {"i": i, "tags": ["x"] * (i % 3)} for i in range(24)}
        queues = [None, other_queue]

        async def put(n: int, key: str, value: Any) -> ToolCallResult:
            request = ToolCallRequest(
                tool="set_value", arguments={"key": key, "value": value}, task_queue=queues[n % 2]
            )
            return await client.execute_workflow(
                ToolCallWorkflow.run, request, id=f"put-{uuid.uuid4()}", task_queue=task_queue
            )

        async with running_worker(client, config):
            results = await asyncio.gather(
                *(put(n, key, value) for n, (key, value) in enumerate(model.items())),
                *(put(n, "last", n) for n in range(8)),
            )
            listed = await run_call(client, task_queue, "list_keys", {"prefix": "item/"})
    finally:
        other.kill()
    assert [r.status for r in results] == [CallStatus.COMPLETED] * len(results)
    assert listed.output == {"keys": sorted(model), "next_offset": None}
    store = SQLiteStorage(path)
    assert {key: store.get(key) for key in model} == {
        key: encode_value(value) for key, value in model.items()
    }
    assert store.get("last") in {str(n) for n in range(8)}
    assert store.usage().keys == len(model) + 1
    store.close()


@pytest.mark.parametrize("depth", [65, 190])
async def test_deep_values_end_the_call_at_plan(
    client: Client, task_queue: str, tmp_path: Path, depth: int
) -> None:
    async with running_worker(client, storage_config(task_queue, tmp_path / "kv.db")):
        result = await run_call(
            client, task_queue, "set_value", {"key": "k", "value": nested(depth)}
        )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert (result.error.code, result.error.fixable_args) == (
        ErrorCode.INVALID_ARGUMENTS,
        ["value"],
    )
    assert "nests deeper than 64 levels" in result.error.message


async def test_a_value_nested_100k_levels_never_leaves_the_client(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """The pydantic data converter refuses to encode it, so no workflow starts at all."""
    workflow_id = f"deep-{uuid.uuid4()}"
    async with running_worker(client, storage_config(task_queue, tmp_path / "kv.db")):
        with pytest.raises(Exception, match="serialization depth") as caught:
            await client.start_workflow(
                ToolCallWorkflow.run,
                ToolCallRequest(tool="set_value", arguments={"key": "k", "value": nested(100_000)}),
                id=workflow_id,
                task_queue=task_queue,
            )
        assert not isinstance(caught.value, RecursionError)
        with pytest.raises(RPCError) as missing:
            await client.get_workflow_handle(workflow_id, result_type=ToolCallResult).describe()
        assert missing.value.status is RPCStatusCode.NOT_FOUND
