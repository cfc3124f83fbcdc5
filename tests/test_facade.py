"""The public facade, ``toolcalls``: every name it exports resolves, each from where the type
checkers are told it comes, and importing the workflow-side names loads no worker code."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import toolcalls

FACADE = Path(toolcalls.__file__)


def _type_checking_imports() -> dict[str, str]:
    """What the facade imports under ``if TYPE_CHECKING:``, name by module."""
    tree = ast.parse(FACADE.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if not isinstance(statement, ast.ImportFrom):
                    continue  # ``__version__: str``
                for alias in statement.names:
                    found[alias.name] = statement.module or ""
    return found


def test_every_exported_name_resolves_from_the_module_the_type_checkers_see() -> None:
    declared = _type_checking_imports()
    assert set(toolcalls.__all__) == {*declared, "__version__"}
    for name, module in declared.items():
        value = getattr(toolcalls, name)
        assert value is getattr(importlib.import_module(module), name), name
    assert dir(toolcalls) == sorted(toolcalls.__all__)


def test_the_version_is_the_distributions() -> None:
    assert toolcalls.__version__ == importlib.metadata.version("toolcalls")


def test_a_name_the_facade_does_not_export_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'toolcalls' has no attribute 'Config'"):
        _ = toolcalls.Config  # type: ignore[attr-defined]


def _modules_after(statement: str) -> list[str]:
    """The ``toolcalls`` modules a fresh interpreter has loaded after ``statement``."""
    probe = (
        f"{statement}\nimport sys\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('toolcalls'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.split()


def test_the_workflow_side_names_load_no_worker_or_client_code() -> None:
    loaded = _modules_after(
        "from toolcalls import CallBudget, CapabilityPolicy, ToolCallRequest, ToolCalls"
    )
    assert "toolcalls.workflows.parent" in loaded
    assert not [m for m in loaded if m.startswith("toolcalls.worker")], loaded
    assert "toolcalls.workflows.client" not in loaded
    # The plugin is the worker's: asking for it loads the worker.
    assert "toolcalls.worker.plugin" in _modules_after("from toolcalls import ToolCallsPlugin")
