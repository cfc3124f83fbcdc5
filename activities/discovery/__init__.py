"""Progressive discovery: ``search_tools`` and ``read_tool`` over the tools a call may use."""

from toolcalls.activities.discovery.family import DISCOVERY, DISCOVERY_TOOLS

__all__ = ["DISCOVERY", "DISCOVERY_TOOLS"]
