"""Configuration, the worker process, the ``toolcalls`` command line and ``ToolCallsPlugin``.

Each name below is imported on first use, so that a command importing one module of this package
(the configuration, say) does not load the worker with every tool's runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcalls._lazy import lazy_names

if TYPE_CHECKING:
    from toolcalls.worker.config import Config, ConfigError, load_config, parse_config
    from toolcalls.worker.payloads.converter import data_converter
    from toolcalls.worker.plugin import ToolCallsPlugin

__all__ = [
    "Config",
    "ConfigError",
    "ToolCallsPlugin",
    "data_converter",
    "load_config",
    "parse_config",
]

_WHERE = {
    "Config": "toolcalls.worker.config",
    "ConfigError": "toolcalls.worker.config",
    "load_config": "toolcalls.worker.config",
    "parse_config": "toolcalls.worker.config",
    "data_converter": "toolcalls.worker.payloads.converter",
    "ToolCallsPlugin": "toolcalls.worker.plugin",
}
"""The module each public name lives in."""


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
