"""A client without the deployment's keys: refused before it starts anything, and a typed error
(never ``KeyError``) when it reads an encrypted call."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from tests.support.payloads import keys
from tests.worker.payloads.conftest import KEYS_ENV, Deployment
from tests.worker.support import one_line, toolcalls, write_config
from toolcalls.worker.config import load_config
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.run import build_worker
from toolcalls.workflows.models.call import ToolCallRequest
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.reach.keyless import (
    ENCRYPTING_WORKER,
    MissingKeys,
    PayloadKeyError,
    ensure_marker,
    marker_id,
)

REQUEST = ToolCallRequest(tool="calculator", arguments={"expression": "6 * 7"})


async def encrypting_worker_polls(client: Client, task_queue: str, timeout: float = 20) -> None:
    """Wait until the task queue shows a worker that says it encrypts."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        if any(ENCRYPTING_WORKER in poller.identity for poller in described.pollers):
            return
        assert loop.time() < deadline, f"no encrypting worker polls {task_queue}"
        await asyncio.sleep(0.1)


async def assert_not_started(client: Client, workflow_id: str) -> None:
    with pytest.raises(RPCError) as missing:
        await client.get_workflow_handle(workflow_id).describe()
    assert missing.value.status is RPCStatusCode.NOT_FOUND


async def test_a_command_without_the_keys_starts_nothing(
    deployment: Deployment,
    client: Client,
    monkeypatch: pytest.MonkeyPatch,
    address: str,
    task_queue: str,
) -> None:
    deployed = deployment()
    workflow_id = f"keyless-{uuid.uuid4()}"
    async with deployed.worker(client, monkeypatch):
        await encrypting_worker_polls(client, task_queue)
        # No --config and no $TOOLCALLS_CONFIG: the command knows of no keys.
        done = await toolcalls(
            deployed.tmp_path,
            *("call", "calculator", '{"expression": "6 * 7"}', "--id", workflow_id),
            *("--task-queue", task_queue, "--address", address),
        )
    assert (done.code, done.stdout) == (2, "")
    assert one_line(done.stderr) == (
        f"toolcalls: call: the workers of task queue '{task_queue}' encrypt their payloads and "
        "this client has no keys: use the deployment's data converter (toolcalls --config FILE, "
        "or $TOOLCALLS_CONFIG, with its [codec] keys); nothing was started"
    )
    await assert_not_started(client, workflow_id)


async def test_a_python_client_without_the_keys_gets_typed_errors(
    deployment: Deployment, client: Client, monkeypatch: pytest.MonkeyPatch, task_queue: str
) -> None:
    deployed = deployment()
    # The session's client has the plain pydantic converter, as the README's first example did.
    plain = ToolCallClient(client, task_queue=task_queue)
    monkeypatch.setenv(KEYS_ENV, keys("k1"))
    keyed = ToolCallClient(
        await Client.connect(
            client.service_client.config.target_host,
            data_converter=data_converter(load_config(deployed.config)),
        ),
        task_queue=task_queue,
    )
    encrypted_id = f"keyed-{uuid.uuid4()}"
    refused_id = f"keyless-{uuid.uuid4()}"
    async with deployed.worker(client, monkeypatch):
        handle = await keyed.start(REQUEST, workflow_id=encrypted_id)
        assert (await handle.result()).output == {"expression": "6 * 7", "result": 42}
        await encrypting_worker_polls(client, task_queue)
        with pytest.raises(MissingKeys, match=f"task queue '{task_queue}' encrypt"):
            await plain.start(REQUEST, workflow_id=refused_id)
    await assert_not_started(client, refused_id)
    with pytest.raises(PayloadKeyError, match="payload encrypted with key 'k1', but this process"):
        await plain.handle(encrypted_id).result()


async def marker_status(client: Client, task_queue: str) -> WorkflowExecutionStatus | None:
    try:
        described = await client.get_workflow_handle(marker_id(task_queue)).describe()
    except RPCError as exc:
        if exc.status is not RPCStatusCode.NOT_FOUND:
            raise
        return None
    assert described.workflow_type == "ToolCallsEncrypts"
    return described.status


async def marker_becomes(
    client: Client, task_queue: str, status: WorkflowExecutionStatus, timeout: float = 20
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (found := await marker_status(client, task_queue)) is not status:
        assert loop.time() < deadline, f"the marker of {task_queue} is {found}, not {status}"
        await asyncio.sleep(0.1)


async def test_the_marker_refuses_a_keyless_client_while_no_worker_polls(client: Client) -> None:
    # A queue no worker ever polled: only the deployment's marker says that it encrypts.
    queue = f"marked-{uuid.uuid4()}"
    await ensure_marker(client, queue, encrypts=True)
    await ensure_marker(client, queue, encrypts=True)  # a second worker start keeps the one
    refused_id = f"keyless-{uuid.uuid4()}"
    with pytest.raises(MissingKeys, match=f"task queue '{queue}' encrypt"):
        await ToolCallClient(client, task_queue=queue).start(REQUEST, workflow_id=refused_id)
    await assert_not_started(client, refused_id)

    # The deployment stopped encrypting: its worker ends the marker, and plaintext is fine.
    await ensure_marker(client, queue, encrypts=False)
    assert await marker_status(client, queue) is WorkflowExecutionStatus.TERMINATED
    await ensure_marker(client, queue, encrypts=False)  # nothing left to end: no error
    started = await ToolCallClient(client, task_queue=queue).start(REQUEST)
    await started.terminate(reason="no worker serves this queue")


async def test_an_encrypting_worker_keeps_the_marker_and_a_plain_one_ends_it(
    deployment: Deployment,
    client: Client,
    monkeypatch: pytest.MonkeyPatch,
    task_queue: str,
    tmp_path: Path,
) -> None:
    deployed = deployment()
    async with deployed.worker(client, monkeypatch):
        await marker_becomes(client, task_queue, WorkflowExecutionStatus.RUNNING)
    # Stopped, the worker leaves it running: that is what refuses a keyless client meanwhile.
    assert await marker_status(client, task_queue) is WorkflowExecutionStatus.RUNNING
    plain = write_config(
        tmp_path, f'task_queue = "{task_queue}"\ntools = ["calculator"]\n', name="plain.toml"
    )
    async with build_worker(client, load_config(plain)):
        await marker_becomes(client, task_queue, WorkflowExecutionStatus.TERMINATED)
