"""``ToolCallsPlugin`` on a worker and a client the user builds, beside their own workflows."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import (
    Replayer,
    Worker,
)

from tests.support.harness import make_config, running_worker
from tests.support.tools import ALL_FAMILIES, PROBE_TOOLS, ProbeTools
from tests.support.user_app import UserApp, shout
from toolcalls.activities.families import BUILTIN_FAMILIES
from toolcalls.activities.family import Family, NoSettings, Resources
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.worker.plugin import PLUGIN_NAME, ToolCallsPlugin
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, ToolCallRequest

EXPECTED = "HI completed {'expression': '6 * 7', 'result': 42}"


def calc(expression: str = "6 * 7") -> ToolCallRequest:
    return ToolCallRequest(tool="calculator", arguments={"expression": expression})


async def connect(env: WorkflowEnvironment, *plugins: ToolCallsPlugin) -> Client:
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        plugins=list(plugins),
    )


async def test_a_client_built_with_the_plugin_gives_its_workers_the_tools(
    env: WorkflowEnvironment,
) -> None:
    # The user's client names only the plugin: it brings the data converter.
    client = await connect(env, ToolCallsPlugin(parse_config({})))
    assert client.data_converter.payload_converter_class is PydanticPayloadConverter
    queue = f"app-{uuid.uuid4()}"
    # The user's worker on their own queue, with their own workflow and activity; the workflow,
    # plan and tools come from the client's plugin, with the worker's queue as the deployment's.
    async with Worker(client, task_queue=queue, workflows=[UserApp], activities=[shout]):
        mine = await client.execute_workflow(
            UserApp.run, "hi", id=f"app-{uuid.uuid4()}", task_queue=queue
        )
        direct = await client.execute_workflow(
            ToolCallWorkflow.run, calc("2 ** 10"), id=f"call-{uuid.uuid4()}", task_queue=queue
        )
    assert mine == EXPECTED
    assert direct.status is CallStatus.COMPLETED
    assert direct.output == {"expression": "2 ** 10", "result": 1024}


async def test_a_worker_given_the_plugin_serves_calls_from_a_plain_client(
    env: WorkflowEnvironment, tmp_path: Path
) -> None:
    config = parse_config(
        {
            "tools": ["calculator", "read_file"],
            "files": {"roots": [str(tmp_path)]},
            "state_dir": str(tmp_path / "state"),
        }
    )
    (tmp_path / "note.txt").write_text("from the user's worker\n")
    client = await connect(env)
    queue = f"app-{uuid.uuid4()}"
    plugin = ToolCallsPlugin(config)
    async with Worker(
        client, task_queue=queue, workflows=[UserApp], activities=[shout], plugins=[plugin]
    ):
        # A plain client has no pydantic converter; calls go through one that has.
        calls = await connect(env, plugin)
        mine = await calls.execute_workflow(
            UserApp.run, "hi", id=f"app-{uuid.uuid4()}", task_queue=queue
        )
        read = await calls.execute_workflow(
            ToolCallWorkflow.run,
            ToolCallRequest(tool="read_file", arguments={"path": str(tmp_path / "note.txt")}),
            id=f"call-{uuid.uuid4()}",
            task_queue=queue,
        )
    assert mine == EXPECTED
    assert read.status is CallStatus.COMPLETED, read.error
    assert read.output is not None
    assert read.output["content"] == "from the user's worker\n"
    assert plugin.served(queue).tools == ["calculator", "read_file"]


def test_the_plugin_serves_only_what_the_configuration_assigns_to_the_queue(
    tmp_path: Path,
) -> None:
    config = parse_config(
        {
            "tools": ["calculator", "current_datetime", "read_file"],
            "files": {"roots": [str(tmp_path)]},
            "activities": {"task_queues": {"read_file": "file-host"}},
        }
    )
    plugin = ToolCallsPlugin(config)
    here = plugin.served("my-app")
    assert (here.workflows, here.plan, here.tools) == (
        True,
        True,
        ["calculator", "current_datetime"],
    )
    # The file host's own configuration names its queue; it runs read_file and no workflows.
    host = ToolCallsPlugin(
        config.model_copy(
            update={"worker": config.worker.model_copy(update={"queue": "file-host"})}
        )
    )
    there = host.served("file-host")
    assert (there.workflows, there.tools) == (False, ["read_file"])
    # A worker on another queue than the configuration names is a mistake, said at once.
    with pytest.raises(
        ConfigError, match=r"worker\.queue is 'file-host' but this worker polls 'x'"
    ):
        host.served("x")


async def test_the_binary_builds_its_worker_through_the_plugin(
    client: Client, task_queue: str
) -> None:
    config = make_config(task_queue)
    async with running_worker(client, config) as probes:
        assert isinstance(probes, ProbeTools)
        result = await client.execute_workflow(
            ToolCallWorkflow.run, calc(), id=f"call-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result.status is CallStatus.COMPLETED
    worker = build_worker(client, config, families=ALL_FAMILIES)
    assert [p.name() for p in worker.config()["plugins"]] == [PLUGIN_NAME]


async def test_a_worker_without_a_cache_must_take_one_workflow_task_at_a_time(
    client: Client, task_queue: str
) -> None:
    plugin = ToolCallsPlugin(parse_config({}))
    # Several tasks at once and no cache: calls started together would never finish (the SDK
    # cancels a call's plan whenever another task arrives), so the worker is refused at once.
    with pytest.raises(
        ConfigError, match=r"^max_cached_workflows=0 needs max_concurrent_workflow_tasks=1 on a"
    ):
        Worker(client, task_queue=task_queue, plugins=[plugin], max_cached_workflows=0)
    one = Worker(
        client,
        task_queue=task_queue,
        plugins=[plugin],
        max_cached_workflows=0,
        max_concurrent_workflow_tasks=1,
    )
    assert one.config(active_config=True).get("max_concurrent_workflow_tasks") == 1
    # A worker serving only tools runs no workflow, so its cache is its own business.
    tools_only = parse_config({"worker": {"serve_workflows": False}})
    Worker(
        client,
        task_queue=f"{task_queue}-tools",
        plugins=[ToolCallsPlugin(tools_only)],
        max_cached_workflows=0,
    )


async def test_a_replayer_with_the_plugin_replays_a_call(client: Client, task_queue: str) -> None:
    async with running_worker(client, make_config(task_queue)):
        handle = await client.start_workflow(
            ToolCallWorkflow.run, calc(), id=f"call-{uuid.uuid4()}", task_queue=task_queue
        )
        await handle.result()
    history = await handle.fetch_history()
    result = await Replayer(workflows=[], plugins=[ToolCallsPlugin()]).replay_workflow(history)
    assert result.replay_failure is None


class Closer:
    """A built object with ``aclose``, as the document parsers started ahead are."""

    def __init__(self, closed: list[Closer]) -> None:
        self.closed = closed

    async def aclose(self) -> None:
        self.closed.append(self)


async def test_two_workers_of_one_plugin_on_one_queue_each_close_what_was_built_for_it(
    client: Client, task_queue: str
) -> None:
    built: list[Closer] = []
    closed: list[Closer] = []

    def build(settings: NoSettings, resources: Resources) -> list[object]:
        built.append(Closer(closed))
        return [ProbeTools(), built[-1]]

    probes = Family(name="probes", settings=NoSettings, tools=PROBE_TOOLS, build=build)
    plugin = ToolCallsPlugin(make_config(task_queue), families=(*BUILTIN_FAMILIES, probes))
    # One process may run one worker per queue and connection: the second has its own.
    other = await Client.connect(
        client.service_client.config.target_host, namespace=client.namespace
    )
    first = Worker(client, task_queue=task_queue, plugins=[plugin])
    second = Worker(other, task_queue=task_queue, plugins=[plugin])
    assert len(built) == 2
    async with first:
        async with second:
            pass
        # The worker built second stopped first: its own object is closed, not the first's.
        assert closed == [built[1]]
    assert closed == [built[1], built[0]]
