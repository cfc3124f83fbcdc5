"""How a worker with ``ToolCallsPlugin`` runs workflows: the SDK's stock path by default, the fast
path (SDK internals) only where the deployment opts in and only on tested SDK versions."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from tests.support.clock_app import ReadsTheClock
from tests.support.user_app import UserApp, shout
from toolcalls.worker import activations, fast_path
from toolcalls.worker.activations import OwnOnTheLoop
from toolcalls.worker.config import parse_config
from toolcalls.worker.plugin import ToolCallsPlugin
from toolcalls.worker.run import build_worker
from toolcalls.worker.sandbox import ContextRunner, OwnUnsandboxed
from toolcalls.workflows.models.call import WORKFLOW_NAME

EXPECTED = "HI completed {'expression': '6 * 7', 'result': 42}"


async def connect(env: WorkflowEnvironment, *plugins: ToolCallsPlugin) -> Client:
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        plugins=list(plugins),
    )


class _SandboxWitness(Interceptor):
    """Records, per workflow type, whether its code ran in the sandbox and whether on the
    worker's event-loop thread (``on_loop``)."""

    def __init__(self) -> None:
        self.seen: dict[str, bool] = {}
        self.on_loop: dict[str, bool] = {}
        self.loop_thread = threading.get_ident()

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        seen, on_loop, loop_thread = self.seen, self.on_loop, self.loop_thread

        class Inbound(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                kind = workflow.info().workflow_type
                seen[kind] = workflow.unsafe.in_sandbox()
                result = await super().execute_workflow(input)
                # After an activity: every activation of the run, not only the first, counts.
                on_loop[kind] = threading.get_ident() == loop_thread
                return result

        return Inbound


async def _run_user_app(client: Client, plugin: ToolCallsPlugin) -> tuple[Worker, _SandboxWitness]:
    """The user's worker (their workflow and activity, the plugin) after one run of their app."""
    queue = f"app-{uuid.uuid4()}"
    witness = _SandboxWitness()
    worker = Worker(
        client,
        task_queue=queue,
        workflows=[UserApp],
        activities=[shout],
        interceptors=[witness],
        plugins=[plugin],
    )
    async with worker:
        mine = await client.execute_workflow(
            UserApp.run, "hi", id=f"app-{uuid.uuid4()}", task_queue=queue
        )
    assert mine == EXPECTED
    return worker, witness


def _stock(worker: Worker) -> bool:
    """The worker has the SDK's own sandbox runner (its class, not a subclass) and executor."""
    options = worker.config(active_config=True)
    return (
        type(options.get("workflow_runner")) is SandboxedWorkflowRunner
        and options.get("workflow_task_executor") is None
    )


@pytest.mark.parametrize("isolate", [False, True])
async def test_by_default_the_users_worker_keeps_the_sdks_runner_and_executor(
    env: WorkflowEnvironment, isolate: bool
) -> None:
    config = parse_config({"worker": {"isolate_workflows": isolate}})
    worker, witness = await _run_user_app(await connect(env), ToolCallsPlugin(config))
    assert _stock(worker)
    runner = worker.config(active_config=True).get("workflow_runner")
    assert isinstance(runner, SandboxedWorkflowRunner)
    # Our pure modules are shared between runs through the SDK's public restrictions; the
    # workflow package too unless isolated. The user's own module never is.
    passthrough = runner.restrictions.passthrough_modules
    assert "toolcalls.workflows.models.call" in passthrough
    assert ("toolcalls.workflows" in passthrough) is not isolate
    assert "tests.support.user_app" not in passthrough
    # Both workflows ran in the sandbox, in the SDK's thread pool.
    assert witness.seen == {"UserApp": True, WORKFLOW_NAME: True}
    assert witness.on_loop == {"UserApp": False, WORKFLOW_NAME: False}


async def test_the_users_sandboxed_workflow_still_fails_on_a_non_deterministic_call(
    env: WorkflowEnvironment,
) -> None:
    client = await connect(env, ToolCallsPlugin(parse_config({})))
    queue = f"app-{uuid.uuid4()}"
    workflow_id = f"clock-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[ReadsTheClock]) as worker:
        assert _stock(worker)
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                ReadsTheClock.run, "now", id=workflow_id, task_queue=queue
            )
    cause = failed.value.cause
    assert "Cannot access datetime.datetime.now" in str(cause), cause
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED


@pytest.mark.parametrize("isolate", [False, True])
async def test_on_the_fast_path_ours_leave_the_sandbox_unless_isolated_and_the_users_never_do(
    env: WorkflowEnvironment, isolate: bool
) -> None:
    # Not isolated, ToolCallWorkflow runs without the sandbox and on the worker's event loop's
    # thread; the user's workflow on the same worker keeps the sandbox and a thread pool. An
    # isolated worker sandboxes both and runs both in the pool.
    config = parse_config({"worker": {"isolate_workflows": isolate, "fast_path": True}})
    worker, witness = await _run_user_app(await connect(env), ToolCallsPlugin(config))
    assert witness.seen == {"UserApp": True, WORKFLOW_NAME: isolate}
    assert witness.on_loop == {"UserApp": False, WORKFLOW_NAME: not isolate}
    options = worker.config(active_config=True)
    runner = options.get("workflow_runner")
    assert isinstance(runner, ContextRunner if isolate else OwnUnsandboxed)
    executor = options.get("workflow_task_executor")
    assert isinstance(executor, OwnOnTheLoop) is not isolate
    if executor is not None:
        # The SDK leaves an executor it was given alone: the plugin shut it down with the worker.
        with pytest.raises(RuntimeError, match="after shutdown"):
            executor.submit(print)


async def test_the_fast_path_on_an_untested_sdk_runs_the_stock_path_and_says_so_once(
    env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(fast_path, "sdk_version", lambda: "1.99.0")
    monkeypatch.setattr(fast_path, "_told", set())
    caplog.set_level(logging.WARNING, logger="toolcalls.worker")
    plugin = ToolCallsPlugin(parse_config({}), fast_path=True)
    client = await connect(env)
    first, witness = await _run_user_app(client, plugin)
    second, _ = await _run_user_app(client, plugin)
    assert _stock(first)
    assert _stock(second)
    assert witness.seen == {"UserApp": True, WORKFLOW_NAME: True}
    told = [r.getMessage() for r in caplog.records if "fast path" in r.getMessage()]
    assert told == [
        "temporalio 1.99.0 is not a version the fast path was tested on "
        f"({', '.join(fast_path.TESTED_TEMPORALIO)}): this worker runs the SDK's stock path"
    ]


async def test_without_asyncios_loop_setter_ours_leave_the_sandbox_but_run_in_the_pool(
    env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The executor puts the worker's loop back through asyncio's private setter; a Python
    # without it keeps the SDK's pool, says so once, and still runs the calls.
    monkeypatch.setattr(activations, "LOOP_SETTER", None)
    monkeypatch.setattr(fast_path, "_told", set())
    caplog.set_level(logging.WARNING, logger="toolcalls.worker")
    plugin = ToolCallsPlugin(parse_config({"worker": {"fast_path": True}}))
    client = await connect(env)
    for _ in range(2):
        worker, witness = await _run_user_app(client, plugin)
        assert witness.seen == {"UserApp": True, WORKFLOW_NAME: False}
        assert witness.on_loop == {"UserApp": False, WORKFLOW_NAME: False}
        options = worker.config(active_config=True)
        assert isinstance(options.get("workflow_runner"), OwnUnsandboxed)
        assert options.get("workflow_task_executor") is None
    told = [r.getMessage() for r in caplog.records if "_set_running_loop" in r.getMessage()]
    assert told == ["asyncio has no _set_running_loop: activations stay in the SDK's pool"]


def test_the_installed_sdk_is_one_the_fast_path_was_tested_on() -> None:
    # CI installs within the declared range: a newer SDK must be tested and listed, or this
    # fails (the workers would quietly run the stock path).
    assert fast_path.sdk_version() in fast_path.TESTED_TEMPORALIO


@pytest.mark.parametrize(
    ("setting", "fast"), [({}, False), ({"fast_path": True}, True), ({"fast_path": False}, False)]
)
async def test_the_binary_takes_the_fast_path_only_when_the_file_asks(
    client: Client, task_queue: str, setting: dict[str, Any], fast: bool
) -> None:
    config = parse_config({"task_queue": task_queue, "worker": setting})
    worker = build_worker(client, config)
    runner = worker.config(active_config=True).get("workflow_runner")
    assert isinstance(runner, OwnUnsandboxed) is fast
    assert _stock(worker) is not fast


def test_a_plugin_takes_the_fast_path_only_when_asked() -> None:
    assert not ToolCallsPlugin(parse_config({})).fast_path
    assert ToolCallsPlugin(parse_config({"worker": {"fast_path": True}})).fast_path
    assert not ToolCallsPlugin(
        parse_config({"worker": {"fast_path": True}}), fast_path=False
    ).fast_path
    assert ToolCallsPlugin(parse_config({}), fast_path=True).fast_path
