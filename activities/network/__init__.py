"""Outbound HTTP: one guarded network path and the tools that use it."""

from toolcalls.activities.network.family import FETCH_TOOLS, NETWORK, SEARCH_TOOLS

__all__ = ["FETCH_TOOLS", "NETWORK", "SEARCH_TOOLS"]
