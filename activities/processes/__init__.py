"""Host process tools: ``execute_command``, ``run_shell`` and ``git``.

They run real processes on the worker's host with bounded time and output (``runner``); they are
host execution, not a sandbox: a command can reach whatever the worker's user can.
"""

from toolcalls.activities.processes.family import PROCESS_TOOLS, PROCESSES

__all__ = ["PROCESSES", "PROCESS_TOOLS"]
