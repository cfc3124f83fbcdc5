"""toolcalls: every built-in agent tool as a durable, policy-checked Temporal activity.

The names below are the public API; everything else under ``toolcalls`` is internal and may change
between releases. Each name is imported on first use, so a sandboxed workflow that imports
``ToolCalls`` from here loads the workflow code only, not the worker's or the client's:

    from toolcalls import CapabilityPolicy, ToolCallRequest, ToolCalls, ToolCallWorkflow
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from toolcalls._lazy import lazy_names

if TYPE_CHECKING:
    __version__: str

    from toolcalls.worker.config import ConfigError, load_config
    from toolcalls.worker.payloads.converter import data_converter
    from toolcalls.worker.plugin import ToolCallsPlugin
    from toolcalls.worker.replay import ReplayFailed, ReplayReport, replay_histories
    from toolcalls.workflows.call.tool_call import ToolCallWorkflow
    from toolcalls.workflows.models.approval import ApprovalDecision
    from toolcalls.workflows.models.call import (
        CallStatus,
        CapabilityPolicy,
        ToolCallRequest,
        ToolCallResult,
    )
    from toolcalls.workflows.models.principal import Principal
    from toolcalls.workflows.reach.client import ToolCallClient
    from toolcalls.workflows.reach.keyless import MissingKeys, PayloadKeyError
    from toolcalls.workflows.reach.parent import CallBudget, ToolCalls
    from toolcalls.workflows.reach.script import run_script

__all__ = [
    "ApprovalDecision",
    "CallBudget",
    "CallStatus",
    "CapabilityPolicy",
    "ConfigError",
    "MissingKeys",
    "PayloadKeyError",
    "Principal",
    "ReplayFailed",
    "ReplayReport",
    "ToolCallClient",
    "ToolCallRequest",
    "ToolCallResult",
    "ToolCallWorkflow",
    "ToolCalls",
    "ToolCallsPlugin",
    "__version__",
    "data_converter",
    "load_config",
    "replay_histories",
    "run_script",
]

_WHERE = {
    "ApprovalDecision": "toolcalls.workflows.models.approval",
    "CallStatus": "toolcalls.workflows.models.call",
    "CapabilityPolicy": "toolcalls.workflows.models.call",
    "ToolCallRequest": "toolcalls.workflows.models.call",
    "ToolCallResult": "toolcalls.workflows.models.call",
    "Principal": "toolcalls.workflows.models.principal",
    "ToolCallWorkflow": "toolcalls.workflows.call.tool_call",
    "CallBudget": "toolcalls.workflows.reach.parent",
    "ToolCalls": "toolcalls.workflows.reach.parent",
    "ToolCallClient": "toolcalls.workflows.reach.client",
    "ToolCallsPlugin": "toolcalls.worker.plugin",
    "ConfigError": "toolcalls.worker.config",
    "load_config": "toolcalls.worker.config",
    "data_converter": "toolcalls.worker.payloads.converter",
    "replay_histories": "toolcalls.worker.replay",
    "ReplayFailed": "toolcalls.worker.replay",
    "ReplayReport": "toolcalls.worker.replay",
    "run_script": "toolcalls.workflows.reach.script",
    "MissingKeys": "toolcalls.workflows.reach.keyless",
    "PayloadKeyError": "toolcalls.workflows.reach.keyless",
}
"""The module each public name lives in."""


_named, __dir__ = lazy_names(__name__, _WHERE)


def __getattr__(name: str) -> Any:
    if name != "__version__":
        return _named(name)
    # Read on first use too: a sandboxed workflow imports this module for every run, and the
    # distribution's metadata is found by scanning the path.
    try:
        value = version("toolcalls")
    except PackageNotFoundError:  # a source tree that was never installed
        value = "0+unknown"
    globals()[name] = value
    return value
