"""``git``: six operations in one repository directory the deployment configures.

What it can touch: whatever git touches in that repository (its working tree, index and objects),
run as the worker's user, with the deployment's environment. How it is confined: the model picks
an operation (add and commit only where ``git.allow_write`` is true) and literal relative paths, a
revision or a message, never options; every program repository configuration could name (hooks,
fsmonitor, filters, diff drivers, pagers, editors, ssh, credential helpers, signature verifiers,
transports) is overridden on the command line; the process runs with the deployment's timeout and
output cap and its whole process group is killed when it ends. Repository configuration otherwise
still applies. With ``[git] backend = "bubblewrap"`` git runs in the sandbox (``..sandbox``).
"""

from toolcalls.activities.processes.git.args import (
    DESCRIPTION,
    READ_ONLY_DESCRIPTION,
    GitArgs,
    GitCall,
    GitReadArgs,
    git_capabilities,
)
from toolcalls.activities.processes.git.family import GIT, GIT_TOOLS
from toolcalls.activities.processes.git.tools import GitTools, resolve_executable, settings_problems

__all__ = [
    "DESCRIPTION",
    "GIT",
    "GIT_TOOLS",
    "READ_ONLY_DESCRIPTION",
    "GitArgs",
    "GitCall",
    "GitReadArgs",
    "GitTools",
    "git_capabilities",
    "resolve_executable",
    "settings_problems",
]
