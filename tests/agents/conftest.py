"""The OpenAI Agents SDK's package, ``agents``, ahead of the repository's folder of that name.

``toolcalls.agents`` lives in the repository's ``agents/`` folder, and pytest puts the
repository's root first on ``sys.path``, where ``import agents`` would find that folder instead of
the SDK. The SDK is imported here with the root left out of the path; once it is in
``sys.modules``, every ``agents`` import, the SDK's own included, gets it. Without the SDK
installed nothing changes: the tests that need it say so. Tracing is off.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _import_the_sdk() -> None:
    loaded = sys.modules.get("agents")
    if loaded is not None and hasattr(loaded, "FunctionTool"):
        return
    sys.modules.pop("agents", None)
    saved = list(sys.path)
    sys.path[:] = [entry for entry in saved if Path(entry or ".").resolve() != ROOT]
    try:
        importlib.import_module("agents")
    except ImportError:
        sys.modules.pop("agents", None)
    finally:
        sys.path[:] = saved


_import_the_sdk()
# The SDK exports traces to OpenAI unless told not to; the tests have no key to send them with.
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
