"""The workflow runners of our workers: the SDK's sandbox with its per-payload context lookup made
direct, and ``OwnUnsandboxed``, which runs this project's own workflows without the sandbox.

For every payload of every activation and completion (three passes each way: codec, external
storage, references) the SDK asks the workflow instance which serialization context applies, and
the sandboxed instance answers by compiling and ``exec``-ing a snippet inside the sandbox with its
import hooks applied. That lookup reads the instance's pending commands and builds a small
dataclass; it imports nothing and runs no workflow code, yet it was about a third of a worker's
CPU per call (a cProfile of a ``bench-scale`` worker). ``ContextRunner`` asks the instance
inside the sandbox directly. Workflow code still runs only through the sandbox's ``activate``.

It reaches into the SDK's private ``_Instance``: when that moves, the lookup falls back to the
SDK's own path (and, should the private module itself move, ``ContextRunner`` is the SDK's runner
unchanged), and ``tests/worker/test_sandbox.py`` fails.

A production worker (``[worker] isolate_workflows = false``) passes the ``workflows`` package
through the sandbox already, so its code runs on the real modules and the sandbox checks nothing in
it, yet each activation still pays for entering and leaving the sandbox. ``OwnUnsandboxed`` runs
``ToolCallWorkflow`` and its companions with the SDK's unsandboxed runner there and every other
workflow of the worker (the user's own) in the sandbox as before. Replays and isolated workers keep
the sandbox for ours too, so a non-deterministic call slipped into the workflow code still fails in
the test suite (docs/performance.md, "The two paths").
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.converter import SerializationContext, StorageDriverStoreContext
from temporalio.worker import (
    UnsandboxedWorkflowRunner,
    WorkflowInstance,
    WorkflowInstanceDetails,
    WorkflowRunner,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

if TYPE_CHECKING:
    from temporalio.worker.workflow_sandbox._runner import _Instance
else:
    try:
        from temporalio.worker.workflow_sandbox._runner import _Instance
    except ImportError:  # the SDK moved it: ContextRunner is the SDK's runner
        _Instance = None

IN_SANDBOX = "__temporal_in_sandbox"
"""Where the SDK keeps the instance's object inside the sandbox (``_Instance``)."""


class ContextRunner(SandboxedWorkflowRunner):
    """``SandboxedWorkflowRunner`` whose instances answer context lookups without ``exec``."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        if _Instance is None:
            return super().create_instance(det)
        return DirectContexts(det, self.runner_class, self.restrictions)


class DirectContexts(_Instance or object):  # type: ignore[misc]
    """A sandboxed instance that looks payload contexts up on the object inside its sandbox."""

    def get_serialization_context(self, command_info: Any) -> SerializationContext | None:
        inside: Any = self.globals_and_locals.get(IN_SANDBOX)
        if inside is None:
            return super().get_serialization_context(command_info)  # type: ignore[no-any-return]
        context: SerializationContext | None = inside.get_serialization_context(command_info)
        return context

    def get_external_store_context(self, command_info: Any) -> StorageDriverStoreContext:
        inside: Any = self.globals_and_locals.get(IN_SANDBOX)
        if inside is None:
            return super().get_external_store_context(command_info)  # type: ignore[no-any-return]
        context: StorageDriverStoreContext = inside.get_external_store_context(command_info)
        return context


class OwnUnsandboxed(WorkflowRunner):
    """``sandbox`` for every workflow but ``own``, which run without the sandbox."""

    def __init__(self, sandbox: WorkflowRunner, own: Iterable[type]) -> None:
        self.sandbox = sandbox
        self.own = frozenset(own)
        self._direct = UnsandboxedWorkflowRunner()
        self._unsandboxed: weakref.WeakSet[WorkflowInstance] = weakref.WeakSet()

    def unsandboxed(self, instance: WorkflowInstance) -> bool:
        """Whether ``instance`` is one of ours, created without the sandbox."""
        return instance in self._unsandboxed

    def _for(self, defn: workflow._Definition) -> WorkflowRunner:
        return self._direct if defn.cls in self.own else self.sandbox

    def prepare_workflow(self, defn: workflow._Definition) -> None:
        self._for(defn).prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        runner = self._for(det.defn)
        instance = runner.create_instance(det)
        if runner is self._direct:
            self._unsandboxed.add(instance)
        return instance

    def set_worker_level_failure_exception_types(
        self, types: Sequence[type[BaseException]]
    ) -> None:
        self.sandbox.set_worker_level_failure_exception_types(types)
        self._direct.set_worker_level_failure_exception_types(types)
