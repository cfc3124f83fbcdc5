"""The ``toolcalls`` facade: every public name resolves, and each loads only what it needs."""

from __future__ import annotations

import json
import subprocess
import sys

import toolcalls

WORKFLOW_NAMES = ("ToolCalls", "ToolCallRequest", "CapabilityPolicy", "CallBudget")


def test_every_public_name_resolves() -> None:
    for name in toolcalls.__all__:
        assert getattr(toolcalls, name) is not None, name
    assert sorted(dir(toolcalls)) == sorted(toolcalls.__all__)


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
    assert "toolcalls.workflows.parent" in loaded
    assert not [m for m in loaded if m.startswith("toolcalls.worker")]
    assert "toolcalls.workflows.client" not in loaded
    # Nor the distribution's metadata, found by scanning the path: it waits for its first use.
    assert version_read is False
    assert toolcalls.__version__ != "0+unknown"
