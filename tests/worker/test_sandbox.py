"""``toolcalls.worker.sandbox`` (the fast path): payload contexts are looked up without running
code in the sandbox.

The runner reaches into the SDK's private sandbox instance; these tests fail when that moves, so
an SDK upgrade cannot silently bring the per-payload ``exec`` back.
"""

from __future__ import annotations

import dataclasses

import pytest
from temporalio import workflow
from temporalio.converter import DataConverter, WorkflowSerializationContext
from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox._runner import _fake_info

from tests.support.user_app import UserApp
from toolcalls.worker.fast_path import fast_runner, with_passthrough
from toolcalls.worker.plugin import OWN_WORKFLOWS
from toolcalls.worker.sandbox import IN_SANDBOX, ContextRunner, DirectContexts, OwnUnsandboxed
from toolcalls.workflows.call.tool_call import ToolCallWorkflow


def _details(workflow_id: str) -> WorkflowInstanceDetails:
    return WorkflowInstanceDetails(
        payload_converter_factory=DataConverter.default._new_payload_converter,
        failure_converter_class=DataConverter.default.failure_converter_class,
        interceptor_classes=[],
        defn=workflow._Definition.must_from_class(ToolCallWorkflow),
        info=dataclasses.replace(_fake_info, workflow_id=workflow_id, namespace="ns"),
        randomness_seed=1,
        extern_functions={},
        disable_eager_activity_execution=False,
        worker_level_failure_exception_types=[],
        patch_activation_callback=None,
        last_completion_result=None,  # type: ignore[arg-type]
        last_failure=None,
    )


def _instance(*, isolate: bool) -> DirectContexts:
    runner = with_passthrough(ContextRunner(), isolate=isolate)
    instance = runner.create_instance(_details("call-1"))
    assert isinstance(instance, DirectContexts)
    return instance


@pytest.mark.parametrize("isolate", [True, False])
async def test_contexts_come_from_the_instance_inside_without_exec(
    isolate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = _instance(isolate=isolate)
    assert IN_SANDBOX in instance.globals_and_locals

    def no_exec(*args: object, **kwargs: object) -> None:
        raise AssertionError("the context lookup ran code in the sandbox")

    monkeypatch.setattr(instance, "_run_code", no_exec)
    context = instance.get_serialization_context(None)
    assert context == WorkflowSerializationContext(namespace="ns", workflow_id="call-1")
    store = instance.get_external_store_context(None)
    assert store.target is not None


async def test_without_the_inside_object_the_sdk_path_answers() -> None:
    instance = _instance(isolate=False)
    expected = instance.get_serialization_context(None)
    inside = instance.globals_and_locals.pop(IN_SANDBOX)
    try:
        with pytest.raises(NameError):
            # The SDK's own path needs the object too: proof that it was the one asked.
            instance.get_serialization_context(None)
    finally:
        instance.globals_and_locals[IN_SANDBOX] = inside
    assert instance.get_serialization_context(None) == expected


def test_the_fast_path_gets_the_direct_lookups_unless_the_worker_chose_another_sandbox() -> None:
    # A Worker's default runner is the SDK's sandbox: the fast path replaces it, keeping its
    # settings.
    default = SandboxedWorkflowRunner()
    chosen = fast_runner(default, isolate=False, own=OWN_WORKFLOWS)
    assert isinstance(chosen, OwnUnsandboxed)
    assert isinstance(chosen.sandbox, ContextRunner)
    assert chosen.sandbox.runner_class is default.runner_class
    assert "toolcalls.workflows" in chosen.sandbox.restrictions.passthrough_modules
    isolated = fast_runner(default, isolate=True, own=OWN_WORKFLOWS)
    assert isinstance(isolated, ContextRunner)
    assert "toolcalls.workflows" not in isolated.restrictions.passthrough_modules

    class Own(SandboxedWorkflowRunner):
        pass

    own = fast_runner(Own(), isolate=False, own=OWN_WORKFLOWS)
    assert isinstance(own, OwnUnsandboxed)
    assert type(own.sandbox) is Own
    assert type(fast_runner(Own(), isolate=True, own=OWN_WORKFLOWS)) is Own
    # A runner that is not the sandbox is the user's choice for every workflow, ours included.
    unsandboxed = UnsandboxedWorkflowRunner()
    assert fast_runner(unsandboxed, isolate=False, own=OWN_WORKFLOWS) is unsandboxed


async def test_our_workflows_get_instances_outside_the_sandbox_and_the_rest_inside() -> None:
    runner = fast_runner(None, isolate=False, own=OWN_WORKFLOWS)
    assert isinstance(runner, OwnUnsandboxed)
    ours = runner.create_instance(_details("call-3"))
    assert not isinstance(ours, DirectContexts)
    assert ours.get_serialization_context(None) == WorkflowSerializationContext(
        namespace="ns", workflow_id="call-3"
    )
    theirs = runner.create_instance(
        dataclasses.replace(_details("app-1"), defn=workflow._Definition.must_from_class(UserApp))
    )
    assert isinstance(theirs, DirectContexts)


async def test_without_the_private_instance_class_the_sdk_runner_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What an SDK that moved its private module gets: its own sandbox, working as before.
    monkeypatch.setattr("toolcalls.worker.sandbox._Instance", None)
    runner = with_passthrough(ContextRunner(), isolate=False)
    instance = runner.create_instance(_details("call-2"))
    assert not isinstance(instance, DirectContexts)
    context = instance.get_serialization_context(None)
    assert context == WorkflowSerializationContext(namespace="ns", workflow_id="call-2")
