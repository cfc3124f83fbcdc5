"""``toolcalls replay``: check exported histories against this version's ``ToolCallWorkflow``.

Export a call's history with ``temporal workflow show -w ID --output json > ID.json`` (or the
UI's download) and replay it here before deploying an upgrade: a nondeterministic history is a call
this version would break if it were still running, so the change needs ``workflow.patched``. The
replay uses the worker's own sandbox and data converter and needs no server; with ``--config`` the
deployment's converter, so that encrypted histories decrypt and claims to payloads stored outside
history are fetched from the store (which must then be reachable).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from google.protobuf import json_format
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from toolcalls.worker.arguments import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from toolcalls.worker.config import Config
from toolcalls.worker.plugin import ToolCallsPlugin
from toolcalls.worker.render import dumps, shorten
from toolcalls.workflows.models.call import WORKFLOW_NAME

REASON_CHARS = 300
"""A replay failure's message is cut to this on the report line."""
_CORE_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


class Verdict(StrEnum):
    OK = "ok"
    NONDETERMINISTIC = "nondeterministic"
    FAILED = "failed"
    """The history replayed into an error other than nondeterminism, or is not a call's."""
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Report:
    """What replaying one file gave."""

    file: str
    verdict: Verdict
    workflow_id: str | None = None
    events: int = 0
    reason: str | None = None

    def line(self) -> str:
        where = f" ({self.workflow_id}, {self.events} events)" if self.workflow_id else ""
        because = f": {self.reason}" if self.reason else ""
        return f"{self.verdict.value:<16} {self.file}{where}{because}"


class HistoryError(ValueError):
    """A file is not a readable workflow history."""


def load_history(path: Path) -> WorkflowHistory:
    """The history in ``path``; its workflow id from its start event, else the file's name."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HistoryError(f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise HistoryError(f"not UTF-8 at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise HistoryError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or not data.get("events"):
        raise HistoryError("not a workflow history: no events")
    try:
        history = WorkflowHistory.from_json(path.stem, data)
    except (json_format.ParseError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HistoryError(f"not a workflow history: {shorten(str(exc), 200)}") from None
    first = history.events[0]
    if first.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        raise HistoryError("not a workflow history: it does not begin with the workflow's start")
    # The id matters to workflow code that reads it; an exported file may be named anything.
    workflow_id = first.workflow_execution_started_event_attributes.workflow_id or path.stem
    return WorkflowHistory(workflow_id, history.events)


async def replay(paths: Sequence[str], config: Config | None = None) -> list[Report]:
    """Replay each file against this version's ``ToolCallWorkflow``, in order, with the data
    converter of ``config`` (its codec and store)."""
    # Core logs every failed replay task as a warning; the report says it once, on one line.
    logging.getLogger("temporalio").setLevel(logging.CRITICAL)
    replayer = Replayer(
        workflows=[],
        plugins=[ToolCallsPlugin(config)],
        runtime=Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="ERROR", other_level="ERROR")
                )
            )
        ),
    )
    return [await _replay_one(replayer, name) for name in paths]


async def _replay_one(replayer: Replayer, name: str) -> Report:
    try:
        history = load_history(Path(name))
    except HistoryError as exc:
        return Report(name, Verdict.UNREADABLE, reason=str(exc))
    workflow_id, events = history.workflow_id, len(history.events)
    kind = history.events[0].workflow_execution_started_event_attributes.workflow_type.name
    if kind != WORKFLOW_NAME:
        reason = f"a {kind or 'nameless'} history, not {WORKFLOW_NAME}"
        return Report(name, Verdict.FAILED, workflow_id, events, reason)
    failure = (
        await replayer.replay_workflow(history, raise_on_replay_failure=False)
    ).replay_failure
    if failure is None:
        return Report(name, Verdict.OK, workflow_id, events)
    nondeterministic = isinstance(failure, NondeterminismError)
    verdict = Verdict.NONDETERMINISTIC if nondeterministic else Verdict.FAILED
    return Report(name, verdict, workflow_id, events, _failure_message(failure))


def _failure_message(failure: Exception) -> str:
    """The core's own message (``[TMPRL1100] Nondeterminism error: ...``) out of the failure's
    debug dump, on one line."""
    text = str(failure)
    if "TMPRL1105" in text:
        return (
            "the history holds claims to payloads stored outside history, and no store is "
            "configured: replay with --config naming the deployment's [payloads] store"
        )
    inner = _CORE_MESSAGE.search(text)
    return shorten(inner.group(1) if inner else text, REASON_CHARS)


async def run(args: argparse.Namespace, config: Config | None = None) -> int:
    """``toolcalls replay``: print a report per file; exit 1 on a failure, 2 on a bad file."""
    reports = await replay(args.histories, config)
    if args.json:
        print(dumps([asdict(report) for report in reports]))
    else:
        print("\n".join(report.line() for report in reports))
    unreadable = sum(r.verdict is Verdict.UNREADABLE for r in reports)
    bad = sum(r.verdict is not Verdict.OK for r in reports)
    if unreadable:
        raise CommandError(EXIT_USAGE, f"replay: {unreadable} of {len(reports)} files unreadable")
    if bad:
        raise CommandError(EXIT_FAILED, f"replay: {bad} of {len(reports)} histories did not replay")
    return EXIT_OK
