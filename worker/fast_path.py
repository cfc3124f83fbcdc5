"""How a worker runs workflows: the SDK's stock path, or the opt-in fast path on tested SDKs.

**Stock** (``ToolCallsPlugin``'s default): the worker keeps the SDK's ``SandboxedWorkflowRunner``
and its thread-pool executor, for the user's workflows and ours alike. The plugin only names our
pure modules (and, unless ``[worker] isolate_workflows``, the whole ``toolcalls.workflows``
package) as passthrough modules of that sandbox, through the SDK's public
``SandboxRestrictions.with_passthrough_modules``, so the sandbox does not re-import them for every
workflow run; a user's own modules are re-imported and checked as before. A runner the user chose
that is not the sandbox is left alone.

**Fast** (``[worker] fast_path = true``; the ``toolcalls worker`` binary's default): the speed-ups
of docs/performance.md, which reach into SDK internals. ``ContextRunner`` (the sandbox with its
per-payload context lookup made direct, ``toolcalls.worker.sandbox``), ``OwnUnsandboxed`` (our own
workflows outside the sandbox) and ``OwnOnTheLoop`` (their activations on the worker's event loop,
``toolcalls.worker.activations``). They apply only on the ``temporalio`` versions in
``TESTED_TEMPORALIO``; on any other the worker logs once that it runs the stock path, and runs it.
Their modules are imported only here, and only when the fast path applies.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from importlib.metadata import version
from typing import TYPE_CHECKING

from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

if TYPE_CHECKING:
    import concurrent.futures

TESTED_TEMPORALIO = ("1.35.0",)
"""The ``temporalio`` versions whose internals the fast path was tested against (the whole suite,
``make bench-overhead``). Add a version only after both ran on it."""

PASSTHROUGH_MODULES = (
    "toolcalls.workflows.models.call",
    "toolcalls.workflows.models.approval",
    "toolcalls.workflows.models.attest",
    "toolcalls.workflows.models.reconcile",
    "toolcalls.workflows.models.reply",
    "toolcalls.workflows.models.principal",
    "toolcalls.workflows.models.verdict",
    "toolcalls.workflows.models.quota",
    "toolcalls.workflows.models.question",
    "toolcalls.workflows.models.definitions",
    "toolcalls.workflows.models.connection",
    "toolcalls.workflows.models.progress",
    "toolcalls.workflows.rules.policy",
    "pydantic",
    "pydantic_core",
)
"""Pure modules the sandbox shares between workflow runs instead of re-importing them for each."""

SHARED_PACKAGE = "toolcalls.workflows"
"""Shared as a whole unless ``isolate_workflows``: our workflow code, checked for determinism by
the replay suite and the isolated test workers."""

log = logging.getLogger("toolcalls.worker")
_told: set[str] = set()


def sdk_version() -> str:
    return version("temporalio")


def fast_path_applies(wanted: bool, sdk: str | None = None) -> bool:
    """Whether the fast path runs: ``wanted`` and ``sdk`` (the installed one by default) tested.

    Logs once per process and version when it was wanted on an untested version."""
    if not wanted:
        return False
    sdk = sdk_version() if sdk is None else sdk
    if sdk in TESTED_TEMPORALIO:
        return True
    _warn_once(
        sdk,
        "temporalio %s is not a version the fast path was tested on (%s): "
        "this worker runs the SDK's stock path",
        sdk,
        ", ".join(TESTED_TEMPORALIO),
    )
    return False


def _warn_once(key: str, message: str, *args: object) -> None:
    """Log ``message`` once per process for ``key``."""
    if key not in _told:
        _told.add(key)
        log.warning(message, *args)


def with_passthrough(runner: SandboxedWorkflowRunner, *, isolate: bool) -> SandboxedWorkflowRunner:
    """``runner`` (of the same class) sharing our pure modules between workflow runs; not
    ``isolate``, the whole ``toolcalls.workflows`` package.

    Isolated, the sandbox re-imports our workflow code for every new workflow run
    and proxies what it imports, so a non-deterministic call slipped into the workflow code fails
    at once. That costs more worker CPU per call than the rest of the call together
    (docs/performance.md), so production workers share the package.
    """
    modules = PASSTHROUGH_MODULES if isolate else (*PASSTHROUGH_MODULES, SHARED_PACKAGE)
    restrictions = runner.restrictions.with_passthrough_modules(*modules)
    return dataclasses.replace(runner, restrictions=restrictions)


def stock_runner(existing: WorkflowRunner | None, *, isolate: bool) -> WorkflowRunner:
    """The SDK's sandbox (the worker's own, or a new one) sharing our modules; any other runner
    the user chose, unchanged."""
    if existing is None:
        existing = SandboxedWorkflowRunner()
    if not isinstance(existing, SandboxedWorkflowRunner):
        return existing
    return with_passthrough(existing, isolate=isolate)


def fast_runner(
    existing: WorkflowRunner | None, *, isolate: bool, own: Iterable[type]
) -> WorkflowRunner:
    """``ContextRunner`` in place of the SDK's own sandbox, and, not ``isolate``, ``own`` outside
    it (``OwnUnsandboxed``). A runner of the user's own choosing that is not the SDK's sandbox
    class is left alone."""
    from toolcalls.worker.sandbox import ContextRunner, OwnUnsandboxed

    if existing is None:
        existing = ContextRunner()
    elif type(existing) is SandboxedWorkflowRunner:
        existing = ContextRunner(
            restrictions=existing.restrictions, runner_class=existing.runner_class
        )
    if not isinstance(existing, SandboxedWorkflowRunner):
        return existing
    sandbox = with_passthrough(existing, isolate=isolate)
    return sandbox if isolate else OwnUnsandboxed(sandbox, own)


def fast_executor(
    runner: WorkflowRunner, max_workers: int | None
) -> concurrent.futures.ThreadPoolExecutor | None:
    """``OwnOnTheLoop`` for a runner that runs our workflows outside the sandbox, else ``None``
    (the SDK's own pool)."""
    from toolcalls.worker.sandbox import OwnUnsandboxed

    if not isinstance(runner, OwnUnsandboxed):
        return None
    from toolcalls.worker.activations import LOOP_SETTER, OwnOnTheLoop

    if LOOP_SETTER is None:
        _warn_once("loop", "asyncio has no _set_running_loop: activations stay in the SDK's pool")
        return None
    return OwnOnTheLoop(runner, max_workers)
