"""The write-side file tools through a real ToolCallWorkflow on a real server, and their config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
)
from toolcalls.activities.files import atomic
from toolcalls.activities.files.settings import MAX_WRITE_BYTES
from toolcalls.worker.config import Config, ConfigError, build_catalog, parse_config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode, ToolCallResult

WRITE_TOOLS = ["create_file", "replace_file", "edit_file", "preview_change", "restore_change"]


@pytest.fixture(autouse=True)
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


def config(task_queue: str, tmp_path: Path, **sections: Any) -> Config:
    root = tmp_path / "root"
    files = {"roots": [str(root)], "checkpoints": str(tmp_path / "state" / "checkpoints.db")}
    return make_config(task_queue, tools=WRITE_TOOLS, files=files, **sections)


def completed(result: ToolCallResult) -> dict[str, Any]:
    assert result.status is CallStatus.COMPLETED, result.error
    assert isinstance(result.output, dict)
    return result.output


async def approve(client: Client, task_queue: str, tool: str, arguments: dict[str, Any]) -> Any:
    """Start a call, approve the preview it publishes; the preview and the result."""
    handle = await start_call(client, task_queue, tool, arguments)
    pending = await pending_approval(handle)
    await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
    return pending, await handle.result()


async def test_every_tool_runs_allowed(client: Client, task_queue: str, tmp_path: Path) -> None:
    target = tmp_path / "root" / "notes.txt"
    path = str(target)
    allow = {"ceiling": {"default_effect": "allow"}}
    async with running_worker(client, config(task_queue, tmp_path, **allow)):
        created = completed(
            await run_call(client, task_queue, "create_file", {"path": path, "content": "a\nb\n"})
        )
        assert (created["kind"], created["mode"]) == ("create", "0600")
        replaced = completed(
            await run_call(client, task_queue, "replace_file", {"path": path, "content": "c\n"})
        )
        edit = {"path": path, "old_text": "c", "new_text": "d", "replace_all": None}
        edited = completed(await run_call(client, task_queue, "edit_file", edit))
        assert edited["replacements"] == 1
        assert target.read_text() == "d\n"
        preview = completed(
            await run_call(
                client, task_queue, "preview_change", {"change_id": replaced["change_id"]}
            )
        )
        assert (preview["conflict"], preview["state"]) == (True, "applied")
        restored = completed(
            await run_call(client, task_queue, "restore_change", {"change_id": edited["change_id"]})
        )
        assert restored["state"] == "restored"
        assert target.read_text() == "c\n"
    # Each change got its own id, from its own call's idempotency key.
    assert len({created["change_id"], replaced["change_id"], edited["change_id"]}) == 3


async def test_writes_and_restores_need_approval_by_default(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    target = tmp_path / "root" / "plan.md"
    target.write_text("step one\n")
    async with running_worker(client, config(task_queue, tmp_path)):
        pending, result = await approve(
            client,
            task_queue,
            "edit_file",
            {"path": str(target), "old_text": "one", "new_text": "two", "replace_all": False},
        )
        assert pending.capabilities == ["filesystem.write"]
        [diff] = pending.preview
        assert diff.kind == "diff"
        assert "-step one\n+step two\n" in (diff.text or "")
        assert diff.data["preimage_sha256"] == atomic.sha256(b"step one\n")
        change = completed(result)
        assert result.approval is not None
        assert target.read_text() == "step two\n"

        new = tmp_path / "root" / "new.txt"
        path = str(new)
        pending, result = await approve(
            client, task_queue, "create_file", {"path": path, "content": "fresh"}
        )
        assert pending.preview[0].text.startswith("--- /dev/null\n")
        completed(result)
        pending, result = await approve(
            client, task_queue, "replace_file", {"path": path, "content": "fresher"}
        )
        assert pending.preview[0].data["preimage_sha256"] == atomic.sha256(b"fresh")
        completed(result)
        assert new.read_text() == "fresher"

        pending, result = await approve(
            client, task_queue, "restore_change", {"change_id": change["change_id"]}
        )
        assert pending.capabilities == ["filesystem.restore"]
        assert "-step two\n+step one\n" in (pending.preview[0].text or "")
        assert completed(result)["action"] == "rewrite"
        assert target.read_text() == "step one\n"

        # preview_change is a read: allowed by default, approved when a request asks for it.
        policy = {"rules": {"filesystem.read": "require_approval"}}
        handle = await start_call(
            client, task_queue, "preview_change", {"change_id": change["change_id"]}, policy=policy
        )
        pending = await pending_approval(handle)
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        assert completed(await handle.result())["state"] == "restored"


async def test_a_file_changed_while_awaiting_approval_is_not_written(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    target = tmp_path / "root" / "config.toml"
    target.write_text("level = 1\n")
    async with running_worker(client, config(task_queue, tmp_path)):
        handle = await start_call(
            client,
            task_queue,
            "replace_file",
            {"path": str(target), "content": "level = 2\n"},
        )
        pending = await pending_approval(handle)
        target.write_text("level = 9\n")  # someone else, after the human saw the diff
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
        result = await handle.result()
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.PRECONDITION_FAILED
    assert "changed since the preview" in result.error.message
    assert target.read_text() == "level = 9\n"


async def test_an_edit_that_cannot_apply_fails_before_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    target = tmp_path / "root" / "a.txt"
    target.write_text("x x\n")
    async with running_worker(client, config(task_queue, tmp_path)):
        result = await run_call(
            client,
            task_queue,
            "edit_file",
            {"path": str(target), "old_text": "x", "new_text": "y", "replace_all": False},
        )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == ["old_text", "replace_all"]
    assert result.approval is None
    assert target.read_text() == "x x\n"


async def test_content_over_the_limit_is_refused_at_plan(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    big = tmp_path / "root" / "big.txt"
    path = str(big)
    async with running_worker(client, config(task_queue, tmp_path)):
        result = await run_call(
            client,
            task_queue,
            "create_file",
            {"path": path, "content": "x" * (MAX_WRITE_BYTES + 1)},
        )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == ["content"]
    assert "the limit is 1048576 bytes (1 MiB)" in result.error.message
    assert not big.exists()


def test_write_tools_need_a_checkpoint_store(tmp_path: Path, root: Path) -> None:
    data: dict[str, Any] = {"tools": ["create_file", "edit_file"], "files": {"roots": [str(root)]}}
    with pytest.raises(ConfigError) as info:
        build_catalog(parse_config(data))
    assert "files.checkpoints: create_file, edit_file need a checkpoint store" in str(info.value)
    data["files"]["checkpoints"] = str(root / "inner" / "checkpoints.db")
    with pytest.raises(ConfigError, match=r"files.checkpoints: .* is inside files.roots.0"):
        build_catalog(parse_config(data))
    data["files"]["checkpoints"] = str(tmp_path / "checkpoints.db")
    assert build_catalog(parse_config(data)).names == ["create_file", "edit_file"]
    # The read tools alone need no store.
    assert build_catalog(
        parse_config({"tools": ["read_file"], "files": {"roots": [str(root)]}})
    ).names == ["read_file"]
