"""The read-side file tools end to end: through ``ToolCallWorkflow`` on a real server, allowed
by the default ceiling and approved under a request policy; their catalog entries, configuration
checks and construction by the worker."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.filetrees import real_root
from tests.support.harness import (
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
)
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.files import FILE_TOOLS, FILES
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.worker.config import ConfigError, build_catalog, config_problems, parse_config
from toolcalls.worker.plugin import build_instances
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    SideEffect,
)

READ_TOOLS = ["read_file", "list_files", "search_files"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = real_root(tmp_path)
    (root / "notes").mkdir()
    (root / "notes" / "todo.txt").write_text("buy milk\nwrite tests\n")
    # Left out of listings and searches by default.
    (root / ".git").mkdir()
    (root / ".git" / "COMMIT_EDITMSG").write_text("write tests\n")
    return root


def config(task_queue: str, root: Path) -> Any:
    return make_config(task_queue, tools=READ_TOOLS, files={"roots": [str(root)]})


def calls(root: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Each tool's arguments and its expected output."""
    todo = f"{root}/notes/todo.txt"
    return {
        "read_file": (
            {"path": todo, "offset": 4, "max_chars": None},
            {"path": todo, "content": "milk\nwrite tests\n", "next_offset": None},
        ),
        "list_files": (
            {
                "path": str(root),
                "pattern": None,
                "recursive": True,
                "max_results": None,
                "include_vcs": None,
            },
            {
                "path": str(root),
                "items": [
                    {"path": f"{root}/notes", "type": "dir", "size": None},
                    {"path": todo, "type": "file", "size": 21},
                ],
                "scanned": 3,
                "skipped": 1,
                "skipped_reasons": {"vcs_directory": 1},
                "truncated": False,
            },
        ),
        "search_files": (
            {"path": str(root), "query": "TESTS"},
            {
                "path": str(root),
                "items": [
                    {"path": todo, "line": 2, "text": "write tests", "text_truncated": False}
                ],
                "scanned": 3,
                "skipped": 1,
                "skipped_reasons": {"vcs_directory": 1},
                "truncated": False,
            },
        ),
    }


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_allowed_by_the_default_ceiling(
    client: Client, task_queue: str, root: Path, tool: str
) -> None:
    arguments, expected = calls(root)[tool]
    async with running_worker(client, config(task_queue, root)):
        result = await run_call(client, task_queue, tool, arguments)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output == expected
    assert result.capabilities == ["filesystem.read"]
    assert result.approval is None


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_runs_once_approved_under_a_request_policy(
    client: Client, task_queue: str, root: Path, tool: str
) -> None:
    arguments, expected = calls(root)[tool]
    policy = CapabilityPolicy(rules={"filesystem.read": Effect.REQUIRE_APPROVAL})
    async with running_worker(client, config(task_queue, root)):
        handle = await start_call(client, task_queue, tool, arguments, policy=policy)
        pending = await pending_approval(handle)
        assert (pending.tool, pending.capabilities) == (tool, ["filesystem.read"])
        assert pending.arguments["path"] == arguments["path"]
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="ann"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output == expected
    assert result.approval is not None
    assert (result.approval.approved, result.approval.approver) == (True, "ann")


async def test_refusals_reach_the_model_as_fixable_errors(
    client: Client, task_queue: str, root: Path
) -> None:
    os.mkfifo(root / "pipe")
    async with running_worker(client, config(task_queue, root)):
        outside = await run_call(client, task_queue, "read_file", {"path": "/etc/passwd"})
        at_plan = await run_call(client, task_queue, "read_file", {"path": f"{root}/a\x00b"})
        spoofed = await run_call(
            client, task_queue, "read_file", {"path": f"{root}/notes/\u202etxt.exe"}
        )
        fifo = await run_call(client, task_queue, "read_file", {"path": f"{root}/pipe"})
        past_end = await run_call(
            client, task_queue, "read_file", {"path": f"{root}/notes/todo.txt", "offset": 99}
        )
    for result in (outside, at_plan, spoofed, fifo, past_end):
        assert result.status is CallStatus.FAILED
        assert result.error is not None
        assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert outside.error is not None
    assert outside.error.message == "read_file: /etc/passwd: not inside a configured root"
    assert outside.error.fixable_args == ["path"]
    assert at_plan.error is not None
    assert "contains a NUL byte" in at_plan.error.message
    assert spoofed.error is not None
    assert spoofed.error.message == (
        "read_file: invalid arguments: path: contains an invisible format character (U+202E)"
    )
    assert spoofed.error.fixable_args == ["path"]
    assert fifo.error is not None
    assert fifo.error.message == f"read_file: {root}/pipe: not a regular file"
    assert past_end.error is not None
    assert past_end.error.fixable_args == ["offset"]


def test_catalog_entries() -> None:
    specs = {spec.name: spec for spec in FILE_TOOLS if spec.name in READ_TOOLS}
    assert set(specs) == set(READ_TOOLS)
    for spec in specs.values():
        assert spec.side_effect is SideEffect.READ
        assert spec.capabilities == ("filesystem.read",)
        assert spec.implementation is FileReadTools
        assert spec.has_prepare is False
    catalog = Catalog(FILE_TOOLS, CatalogSettings(enabled=READ_TOOLS))
    search = catalog.options("search_files")
    assert search.heartbeat is not None
    assert search.heartbeat < search.start_to_close
    # 32 MiB at 1 MB/s, plus the walk, fits.
    assert search.start_to_close >= timedelta(seconds=60)
    for name in ("read_file", "list_files"):
        assert catalog.options(name).start_to_close <= timedelta(seconds=10)
        assert catalog.options(name).maximum_attempts == 1


def test_config_needs_absolute_existing_roots(tmp_path: Path) -> None:
    def problems(**files: Any) -> list[str]:
        return config_problems(parse_config({"tools": ["read_file", "search_files"], **files}))

    assert problems() == ["files.roots: read_file, search_files need at least one root"]
    assert problems(files={"roots": ["relative/dir"]}) == [
        "files.roots.0: relative/dir is not an absolute path"
    ]
    assert problems(files={"roots": [str(tmp_path), str(tmp_path / "missing")]}) == [
        f"files.roots.1: {tmp_path / 'missing'} is not an existing directory"
    ]
    (tmp_path / "file").write_text("x")
    assert problems(files={"roots": [str(tmp_path / "file")]}) == [
        f"files.roots.0: {tmp_path / 'file'} is not an existing directory"
    ]
    assert problems(files={"roots": [str(tmp_path)]}) == []
    # A host that does not run the file tools need not have their directories.
    elsewhere = parse_config(
        {
            "tools": ["list_files"],
            "files": {"roots": ["/nowhere/on/this/host"]},
            "activities": {"task_queues": {"list_files": "file-host"}},
        }
    )
    assert config_problems(elsewhere) == []
    with pytest.raises(ConfigError, match=r"files\.roots: list_files needs at least one root"):
        build_catalog(parse_config({"tools": ["list_files"]}))


def test_worker_builds_the_family_with_its_roots(tmp_path: Path) -> None:
    root = real_root(tmp_path)
    cfg = parse_config({"tools": READ_TOOLS, "files": {"roots": [str(root)]}})
    catalog = build_catalog(cfg)
    families = build_instances(cfg, catalog, READ_TOOLS)
    tools = families[FileReadTools]
    assert isinstance(tools, FileReadTools)
    try:
        assert [r.path for r in tools.roots.roots] == [str(root)]
        assert tools.settings == cfg.family_settings(FILES).files
        assert build_instances(cfg, catalog, ["calculator"]) == {}
    finally:
        tools.roots.close()
