"""The core tools, which need no configuration: arithmetic, the clock and questions."""

from toolcalls.activities.core.family import CORE, CORE_TOOLS

__all__ = ["CORE", "CORE_TOOLS"]
