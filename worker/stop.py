"""``toolcalls cancel ID [--reason TEXT]``: stop a call.

Exit codes: 0 the request went to the running call; 1 the call had ended already (nothing is
changed) or no call has the id; 2 a reason over the limit, or the server could not be reached.
"""

from __future__ import annotations

import argparse

from toolcalls.worker.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from toolcalls.worker.render import dumps
from toolcalls.workflows.reach.client import ToolCallClient


async def stop_command(calls: ToolCallClient, args: argparse.Namespace) -> int:
    """Stop the call ``args.workflow_id``; one that had ended already is left as it is."""
    workflow_id = args.workflow_id
    try:
        stopped = await calls.cancel(workflow_id, reason=args.reason)
    except ValueError as exc:
        raise CommandError(EXIT_USAGE, f"cancel {workflow_id}: --reason: {exc}") from None
    if args.json:
        data = {"workflow_id": workflow_id, "requested": stopped.requested, "ended": stopped.ended}
        print(dumps(data))
    elif stopped.requested:
        print(f"cancel requested for {workflow_id}")
    if stopped.requested:
        return EXIT_OK
    raise CommandError(
        EXIT_FAILED,
        f"cancel {workflow_id}: the call already ended {stopped.ended}; nothing was changed",
    )
