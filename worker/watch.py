"""``toolcalls watch ID [--from N]``: a call's progress stream, then its result.

Text: a command's stdout lines on stdout and its stderr lines on stderr, as it printed them;
counts (bytes, pages, messages) and notes on stderr as ``[bytes 4096/10000]``; items dropped
before they were read (the stream's retention bound) as one line on stderr saying how many and
where the stream goes on; at the end the result's summary line on stderr. ``--json``: one JSON
object a line on stdout, ``{"item": ...}``, ``{"gap": ...}`` and last ``{"result": ...}``.

Exit codes (``exits``): 0 the call completed; 1 it ended otherwise (its reason on stderr), or no
call has the id; 2 usage or connection errors.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from temporalio.client import WorkflowFailureError

from toolcalls.worker.exits import EXIT_FAILED, EXIT_OK, CommandError
from toolcalls.worker.render import compact, result_reason
from toolcalls.workflows.models.call import CallStatus, ToolCallResult
from toolcalls.workflows.models.progress import ProgressItem, ProgressKind
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.reach.follow import ProgressGap


async def watch(calls: ToolCallClient, args: argparse.Namespace) -> int:
    """Print the call's progress from ``args.from_offset`` as it comes, then its result."""
    workflow_id: str = args.workflow_id
    result: ToolCallResult | None = None
    try:
        async for event in calls.follow(workflow_id, args.from_offset):
            if isinstance(event, ToolCallResult):
                result = event
            elif args.json:
                key = "gap" if isinstance(event, ProgressGap) else "item"
                print(compact({key: _json(event)}), flush=True)
            else:
                _print(workflow_id, event)
    except WorkflowFailureError as exc:
        raise CommandError(
            EXIT_FAILED, f"watch {workflow_id}: the call ended without a result: {exc.cause}"
        ) from None
    assert result is not None
    if args.json:
        print(compact({"result": result.model_dump(mode="json")}), flush=True)
    if result.status is not CallStatus.COMPLETED:
        raise CommandError(EXIT_FAILED, f"call {workflow_id}: {result_reason(result)}")
    if not args.json:
        print(f"toolcalls: call {workflow_id}: completed", file=sys.stderr, flush=True)
    return EXIT_OK


def _json(event: ProgressItem | ProgressGap) -> object:
    if isinstance(event, ProgressGap):
        return dataclasses.asdict(event)
    return event.model_dump(mode="json", exclude_none=True)


def _print(workflow_id: str, event: ProgressItem | ProgressGap) -> None:
    if isinstance(event, ProgressGap):
        resumes = event.from_offset + event.missed
        print(
            f"toolcalls: watch {workflow_id}: {event.missed} items before offset {resumes} were "
            "dropped (the call keeps only its latest); continuing there",
            file=sys.stderr,
            flush=True,
        )
    elif event.kind is ProgressKind.STDOUT:
        print(event.text, flush=True)
    elif event.kind is ProgressKind.STDERR:
        print(event.text, file=sys.stderr, flush=True)
    elif event.kind is ProgressKind.NOTE:
        print(f"[{event.text}]", file=sys.stderr, flush=True)
    else:
        total = f"/{event.total}" if event.total is not None else ""
        print(f"[{event.kind.value} {event.done}{total}]", file=sys.stderr, flush=True)
