"""Host process tools: ``execute_command``, ``run_shell`` and ``git``.

They run real processes on the worker's host with bounded time and output (``runner``): as host
processes that reach whatever the worker's user can (``backend = "host"``, the default), or inside
a bubblewrap sandbox whose grant the approver sees (``backend = "bubblewrap"``, ``sandbox``).
"""

from toolcalls.activities.processes.family import PROCESS_TOOLS, PROCESSES

__all__ = ["PROCESSES", "PROCESS_TOOLS"]
