"""The document tools end to end through ``ToolCallWorkflow`` on a real server (allowed by the
default ceiling, approved under a request policy), their catalog entries, configuration checks
(including the ``documents`` extra) and construction by the worker."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.documents import docx_file, text_pdf
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
from toolcalls.activities.documents import DOCUMENT_TOOLS
from toolcalls.activities.documents.tools import EXTRA, DocumentTools
from toolcalls.activities.family import FamilyError
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

TOOLS = ["read_document", "search_document"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = real_root(tmp_path)
    (root / "report.pdf").write_bytes(text_pdf([["Intro"], ["Revenue grew 12%"]]))
    return root


def config(task_queue: str, root: Path) -> Any:
    return make_config(task_queue, tools=TOOLS, documents={"roots": [str(root)]})


def calls(root: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    path = f"{root}/report.pdf"
    size = (root / "report.pdf").stat().st_size
    return {
        "read_document": (
            {"path": path},
            {
                "path": path,
                "format": "pdf",
                "input_bytes": size,
                "sections": [
                    {"location": "page 1", "text": "Intro", "rows": None},
                    {"location": "page 2", "text": "Revenue grew 12%", "rows": None},
                ],
                "truncated": False,
            },
        ),
        "search_document": (
            {"path": path, "query": "REVENUE", "max_results": None},
            {
                "path": path,
                "format": "pdf",
                "input_bytes": size,
                "matches": [{"location": "page 2", "snippet": "Revenue grew 12%"}],
                "truncated": False,
            },
        ),
    }


async def test_allowed_and_approved_calls(client: Client, task_queue: str, root: Path) -> None:
    policy = CapabilityPolicy(rules={"filesystem.read": Effect.REQUIRE_APPROVAL})
    async with running_worker(client, config(task_queue, root)):
        for tool in TOOLS:
            arguments, expected = calls(root)[tool]
            allowed = await run_call(client, task_queue, tool, arguments)
            assert allowed.status is CallStatus.COMPLETED, allowed.error
            assert allowed.output == expected
            assert allowed.capabilities == ["filesystem.read"]
            assert allowed.approval is None
            handle = await start_call(client, task_queue, tool, arguments, policy=policy)
            pending = await pending_approval(handle)
            assert (pending.tool, pending.capabilities) == (tool, ["filesystem.read"])
            await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="ann"))
            approved = await handle.result()
            assert approved.status is CallStatus.COMPLETED, approved.error
            assert approved.output == expected
            assert approved.approval is not None
            assert approved.approval.approver == "ann"


async def test_refusals_reach_the_model(client: Client, task_queue: str, root: Path) -> None:
    (root / "memo.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512))
    async with running_worker(client, config(task_queue, root)):
        outside = await run_call(client, task_queue, "read_document", {"path": "/etc/x.pdf"})
        locked = await run_call(client, task_queue, "read_document", {"path": f"{root}/memo.docx"})
        too_many = await run_call(
            client,
            task_queue,
            "search_document",
            {"path": f"{root}/report.pdf", "query": "x", "max_results": 101},
        )
        docx_ok = await run_call(client, task_queue, "read_document", {"path": f"{root}/r.docx"})
    for result, fixable in ((outside, ["path"]), (locked, ["path"]), (too_many, ["max_results"])):
        assert result.status is CallStatus.FAILED
        assert result.error is not None
        assert result.error.code is ErrorCode.INVALID_ARGUMENTS
        assert result.error.fixable_args == fixable
    assert locked.error is not None
    assert "encrypted Office document" in locked.error.message
    assert docx_ok.error is not None
    assert docx_ok.error.message.endswith("does not exist")


def test_catalog_entries() -> None:
    assert [spec.name for spec in DOCUMENT_TOOLS] == TOOLS
    for spec in DOCUMENT_TOOLS:
        assert spec.side_effect is SideEffect.READ
        assert spec.capabilities == ("filesystem.read",)
        assert spec.implementation is DocumentTools
        assert spec.has_prepare is False
    catalog = Catalog(DOCUMENT_TOOLS, CatalogSettings(enabled=TOOLS))
    for name in TOOLS:
        options = catalog.options(name)
        assert options.heartbeat == timedelta(seconds=10)
        assert options.start_to_close == timedelta(seconds=60)
        assert options.maximum_attempts == 1


def test_config_needs_roots_the_extra_and_a_fitting_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def problems(**sections: Any) -> list[str]:
        return config_problems(parse_config({"tools": TOOLS, **sections}))

    assert problems() == ["documents.roots: read_document, search_document need at least one root"]
    assert problems(documents={"roots": ["relative"]}) == [
        "documents.roots.0: relative is not an absolute path"
    ]
    assert problems(documents={"roots": [str(tmp_path / "missing")]}) == [
        f"documents.roots.0: {tmp_path / 'missing'} is not an existing directory"
    ]
    assert problems(documents={"roots": [str(tmp_path)]}) == []
    shortened = problems(
        documents={"roots": [str(tmp_path)], "timeout_seconds": 30},
        activities={"timeouts": {"read_document": {"start_to_close_seconds": 35}}},
    )
    assert shortened == [
        "documents.timeout_seconds: 30 s leaves read_document less than 10 s of its 35 s "
        "start_to_close to stop the parser and report"
    ]
    with pytest.raises(ConfigError, match="timeout_seconds: Input should be less than or equal"):
        parse_config({"tools": TOOLS, "documents": {"roots": ["/x"], "timeout_seconds": 51}})
    # The extra, simulated missing: its imports fail.
    assert EXTRA.missing() == []
    monkeypatch.setitem(sys.modules, "pypdf", None)
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    assert EXTRA.missing() == ["openpyxl", "pypdf"]
    assert problems(documents={"roots": [str(tmp_path)]}) == [
        "documents: read_document, search_document need the documents extra (missing openpyxl, "
        "pypdf): pip install 'toolcalls[documents]'"
    ]
    with pytest.raises(ConfigError, match=r"toolcalls\[documents\]"):
        build_catalog(parse_config({"tools": TOOLS, "documents": {"roots": [str(tmp_path)]}}))
    # A host that does not run the document tools needs neither their roots nor the extra.
    elsewhere = parse_config(
        {
            "tools": ["read_document"],
            "documents": {"roots": ["/nowhere/here"]},
            "activities": {"task_queues": {"read_document": "doc-host"}},
        }
    )
    assert config_problems(elsewhere) == []


def test_worker_builds_the_family_with_its_roots(tmp_path: Path) -> None:
    root = real_root(tmp_path)
    (root / "a.docx").write_bytes(docx_file(["x"]))
    cfg = parse_config({"tools": TOOLS, "documents": {"roots": [str(root)], "max_sections": 7}})
    families = build_instances(cfg, build_catalog(cfg), TOOLS)
    tools = families[DocumentTools]
    assert isinstance(tools, DocumentTools)
    assert tools.settings.max_sections == 7
    assert tools.roots.locate(f"{root}/a.docx").root.path == str(root)
    gone = parse_config({"tools": TOOLS, "documents": {"roots": [str(root / "gone")]}})
    with pytest.raises(FamilyError, match=r"^documents\.roots: "):
        build_instances(gone, Catalog(DOCUMENT_TOOLS, CatalogSettings(enabled=TOOLS)), TOOLS)
