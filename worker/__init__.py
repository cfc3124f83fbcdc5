"""Configuration, the worker process, the ``toolcalls`` command line and ``ToolCallsPlugin``."""

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
