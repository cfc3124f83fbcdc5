"""``toolcalls replay`` and ``replay_histories``: check exported histories against this version.

Export a history with ``temporal workflow show -w ID --output json > ID.json`` (or the UI's
download, or ``handle.fetch_history()``) and replay it here before deploying an upgrade: a
nondeterministic history is a workflow this version would break if it were still running, so the
change needs ``workflow.patched``. Histories of ``ToolCallWorkflow`` replay as they are; a user's
own parent workflows replay when their classes are given (``--workflow module:Class``, or
``workflows=[...]``), beside ``ToolCallWorkflow``, whose code their inline calls run.

The replay uses ``ToolCallsPlugin``, so the worker's sandbox and the deployment's data converter,
and needs no server; with a configuration, encrypted histories decrypt and claims to payloads
stored outside history are fetched from the store (which must then be reachable).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from google.protobuf import json_format
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Replayer

from toolcalls.worker.arguments import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from toolcalls.worker.config import Config, load_config
from toolcalls.worker.plugin import ToolCallsPlugin
from toolcalls.worker.render import dumps, shorten
from toolcalls.workflows.models.call import WORKFLOW_NAME

REASON_CHARS = 300
"""A replay failure's message is cut to this on the report line."""
_CORE_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')

HistorySource = str | os.PathLike[str] | WorkflowHistory
"""A history to replay: the path of an exported JSON file, or a ``WorkflowHistory``."""


class Verdict(StrEnum):
    OK = "ok"
    NONDETERMINISTIC = "nondeterministic"
    FAILED = "failed"
    """The history replayed into an error other than nondeterminism, or is of no given workflow."""
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class ReplayReport:
    """What replaying one history gave; ``file`` is its path, or the id of a ``WorkflowHistory``
    given as an object."""

    file: str
    verdict: Verdict
    workflow_id: str | None = None
    events: int = 0
    reason: str | None = None

    def line(self) -> str:
        where = f" ({self.workflow_id}, {self.events} events)" if self.workflow_id else ""
        because = f": {self.reason}" if self.reason else ""
        return f"{self.verdict.value:<16} {self.file}{where}{because}"


class ReplayFailed(Exception):
    """``replay_histories`` found histories that did not replay.

    The message has a line per such history; ``reports`` holds every history's report, and the
    exception's ``__cause__`` is the first failure the replay raised (Temporal's
    ``NondeterminismError`` for a nondeterministic history), if a replay raised one.
    """

    def __init__(self, reports: Sequence[ReplayReport]) -> None:
        self.reports = list(reports)
        bad = [report.line() for report in self.reports if report.verdict is not Verdict.OK]
        super().__init__(
            f"{len(bad)} of {len(self.reports)} histories did not replay:\n" + "\n".join(bad)
        )


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
    # An exported file may be named anything.
    return _with_recorded_id(history)


async def replay_histories(
    histories: Iterable[HistorySource],
    workflows: Sequence[type] = (),
    *,
    config: Config | str | Path | None = None,
    raise_on_replay_failure: bool = True,
) -> list[ReplayReport]:
    """Replay each history against this version of ``workflows`` and of ``ToolCallWorkflow``.

    For a test suite, as ``Replayer.replay_workflows`` is: every history is replayed, then, if any
    did not replay, ``ReplayFailed`` is raised naming each of them.

    Args:
        histories: paths of histories exported with ``temporal workflow show --output json``, or
            ``WorkflowHistory`` objects (``await handle.fetch_history()``).
        workflows: your own workflow classes whose histories these are (parents using
            ``ToolCalls``); ``ToolCallWorkflow`` is always there, and the inline calls your parents
            make run its code.
        config: the deployment's configuration, for its data converter (the ``[codec]`` keys,
            the ``[payloads]`` store): a ``Config`` or a file's path; by default
            ``$TOOLCALLS_CONFIG``, else plain pydantic payloads.
        raise_on_replay_failure: ``False`` returns the reports of failed histories too.

    Raises:
        ReplayFailed: a history did not replay, or could not be read.
        TypeError: a class in ``workflows`` is not a workflow class.
        ConfigError: the configuration is invalid or its keys cannot be read.
    """
    if not isinstance(config, Config):
        config = load_config(config)
    outcomes = await _replay(histories, workflows, config)
    reports = [report for report, _ in outcomes]
    if raise_on_replay_failure and any(r.verdict is not Verdict.OK for r in reports):
        cause = next((failure for _, failure in outcomes if failure is not None), None)
        raise ReplayFailed(reports) from cause
    return reports


async def _replay(
    histories: Iterable[HistorySource],
    workflows: Sequence[type],
    config: Config | None,
    runtime: Runtime | None = None,
) -> list[tuple[ReplayReport, Exception | None]]:
    """Each history's report and the failure its replay raised, in order."""
    # The plugin brings ToolCallWorkflow; naming it again would register it twice.
    workflows = [cls for cls in workflows if workflow_name(cls) != WORKFLOW_NAME]
    names = {WORKFLOW_NAME, *(workflow_name(cls) for cls in workflows)}
    replayer = Replayer(workflows=workflows, plugins=[ToolCallsPlugin(config)], runtime=runtime)
    return [await _replay_one(replayer, names, source) for source in histories]


def workflow_name(cls: type) -> str | None:
    """The workflow type ``cls`` runs (``None`` for a dynamic workflow, which runs any).

    Raises:
        TypeError: ``cls`` is not a class decorated with ``@workflow.defn``.
    """
    definition = workflow._Definition.from_class(cls) if isinstance(cls, type) else None
    if definition is None:
        raise TypeError(f"{cls!r} is not a workflow class (decorated with @workflow.defn)")
    return definition.name


async def _replay_one(
    replayer: Replayer, names: set[str | None], source: HistorySource
) -> tuple[ReplayReport, Exception | None]:
    if isinstance(source, WorkflowHistory):
        name, history = source.workflow_id, _with_recorded_id(source)
    else:
        name = os.fspath(source)
        try:
            history = load_history(Path(name))
        except HistoryError as exc:
            return ReplayReport(name, Verdict.UNREADABLE, reason=str(exc)), None
    workflow_id, events = history.workflow_id, len(history.events)
    if not events:
        return ReplayReport(name, Verdict.UNREADABLE, workflow_id, reason="no events"), None
    kind = history.events[0].workflow_execution_started_event_attributes.workflow_type.name
    if kind not in names and None not in names:
        known = " or ".join(sorted(n for n in names if n is not None))
        reason = f"a {kind or 'nameless'} history, not {known}"
        return ReplayReport(name, Verdict.FAILED, workflow_id, events, reason), None
    failure = (
        await replayer.replay_workflow(history, raise_on_replay_failure=False)
    ).replay_failure
    if failure is None:
        return ReplayReport(name, Verdict.OK, workflow_id, events), None
    nondeterministic = isinstance(failure, workflow.NondeterminismError)
    verdict = Verdict.NONDETERMINISTIC if nondeterministic else Verdict.FAILED
    return ReplayReport(name, verdict, workflow_id, events, _failure_message(failure)), failure


def _with_recorded_id(history: WorkflowHistory) -> WorkflowHistory:
    """``history`` under the workflow id its start event records, if it records one: workflow code
    that reads its id (``ToolCalls`` names children after it) replays only under that id."""
    if not history.events:
        return history
    first = history.events[0].workflow_execution_started_event_attributes
    if first.workflow_id and first.workflow_id != history.workflow_id:
        return WorkflowHistory(first.workflow_id, history.events)
    return history


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


def import_workflow(spec: str) -> type:
    """``--workflow module:Class``: the class, imported the way ``python -m`` would find it.

    Raises:
        CommandError: (usage) no colon, a module that does not import, no such attribute, or
            not a workflow class.
    """
    module_name, colon, attribute = spec.partition(":")
    where = f"replay: --workflow {spec}"
    if not (colon and module_name and attribute):
        raise CommandError(
            EXIT_USAGE, f"{where}: expected MODULE:CLASS, such as workflows:MyParent"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module may raise anything while it imports
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing and (module_name + ".").startswith(f"{missing}."):
            raise CommandError(
                EXIT_USAGE, f"{where}: no module named {missing!r} in {os.getcwd()} or on the path"
            ) from None
        problem = shorten(f"{type(exc).__name__}: {exc}", REASON_CHARS)
        raise CommandError(EXIT_USAGE, f"{where}: importing {module_name}: {problem}") from None
    found: object = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise CommandError(EXIT_USAGE, f"{where}: {module_name} has no attribute {attribute!r}")
    if not isinstance(found, type) or workflow._Definition.from_class(found) is None:
        raise CommandError(
            EXIT_USAGE, f"{where}: {attribute} is not a workflow class (no @workflow.defn)"
        )
    return found


def _quiet_runtime() -> Runtime:
    """A runtime whose core does not log each failed replay task: the report says it once."""
    return Runtime(
        telemetry=TelemetryConfig(
            logging=LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
        )
    )


async def run(args: argparse.Namespace, config: Config | None = None) -> int:
    """``toolcalls replay``: print a report per file; exit 1 on a failure, 2 on a bad file."""
    workflows: list[type] = []
    if args.workflow:
        # Like ``python -m``: the user's modules are found from the working directory.
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        workflows = [import_workflow(spec) for spec in args.workflow]
    logging.getLogger("temporalio").setLevel(logging.CRITICAL)
    outcomes = await _replay(args.histories, workflows, config, _quiet_runtime())
    reports = [report for report, _ in outcomes]
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
