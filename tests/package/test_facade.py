"""The ``toolcalls`` facade: every public name resolves, and each loads only what it needs."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

import toolcalls

WORKFLOW_NAMES = ("ToolCalls", "ToolCallRequest", "CapabilityPolicy", "CallBudget")


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


def test_every_public_name_resolves_from_the_module_the_type_checkers_see() -> None:
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
        _ = toolcalls.Config


def test_a_workflows_imports_load_no_worker_or_client_code() -> None:
    # A fresh interpreter: what a sandboxed workflow's ``from toolcalls import ...`` loads.
    probe = (
        "import json, sys, toolcalls; "
        f"from toolcalls import {', '.join(WORKFLOW_NAMES)}; "
        "print(json.dumps([sorted(m for m in sys.modules if m.startswith('toolcalls')), "
        "'__version__' in vars(toolcalls)]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded, version_read = json.loads(done.stdout)
    assert "toolcalls.workflows.reach.parent" in loaded
    assert not [m for m in loaded if m.startswith("toolcalls.worker")]
    assert "toolcalls.workflows.reach.client" not in loaded
    # Nor the distribution's metadata, found by scanning the path: it waits for its first use.
    assert version_read is False
    assert toolcalls.__version__ != "0+unknown"


def test_the_workflows_package_gives_every_name_it_lists() -> None:
    import toolcalls.workflows as package

    missing = [name for name in package.__all__ if getattr(package, name, None) is None]
    assert not missing, f"toolcalls.workflows lists names it cannot give: {missing}"
