"""``ToolCallsPlugin``: what a Temporal client, worker and replayer need for tool calls.

Given to a client it sets the deployment's data converter (pydantic payloads, the ``[codec]``
encryption, the ``[payloads]`` store: ``toolcalls.worker.payloads.converter``); given to a worker
(or to the client the worker is built from) it adds ``ToolCallWorkflow`` (and the short
workflows beside it: grants, definitions, ``ToolCallReconcile``, the encryption marker), the
``plan`` activity and the activities of the enabled tools this worker serves (with their lookups
for reconciling), built from the families' declarations; given to a replayer it adds the
workflow and the converter. The ``toolcalls worker`` binary builds its worker through it too, so a
user's own worker and ours serve calls the same way.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.converter import (
    DefaultFailureConverter,
    DefaultFailureConverterWithEncodedAttributes,
)
from temporalio.plugin import SimplePlugin
from temporalio.worker import ReplayerConfig, Worker, WorkerConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from toolcalls.activities.catalog import Catalog
from toolcalls.activities.connections import Connections
from toolcalls.activities.families import BUILTIN_FAMILIES
from toolcalls.activities.family import AnyFamily, Resources
from toolcalls.activities.grants import GrantFinder
from toolcalls.activities.notifications import Notifier
from toolcalls.activities.quotas import QuotaLedgers
from toolcalls.activities.runtime import ToolRuntime
from toolcalls.worker.attestation import deployment_attestor
from toolcalls.worker.chat.slack import TARGET as SLACK_TARGET, SlackAPI, SlackChannel
from toolcalls.worker.config import Config, ConfigError, build_catalog, policy_sets
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.fast_path import (
    fast_executor,
    fast_path_applies,
    fast_runner,
    stock_runner,
    with_passthrough,
)
from toolcalls.worker.inbox.settings import with_inbox_groups
from toolcalls.worker.payloads.converter import PayloadPipeline, payload_pipeline
from toolcalls.worker.telemetry.tracing import (
    TracingUnavailable,
    install_tracer_provider,
    tracing_interceptor,
)
from toolcalls.workflows.call.definitions import DefinitionsWorkflow
from toolcalls.workflows.call.grants import GrantWorkflow
from toolcalls.workflows.call.ledger import QuotaLedgerWorkflow
from toolcalls.workflows.call.marker import EncryptsMarkerWorkflow
from toolcalls.workflows.call.reconcile import ToolCallReconcileWorkflow
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.reach.keyless import ENCRYPTING_WORKER, ensure_marker

PLUGIN_NAME = "toolcalls.ToolCallsPlugin"
OWN_WORKFLOWS = (
    ToolCallWorkflow,
    GrantWorkflow,
    DefinitionsWorkflow,
    ToolCallReconcileWorkflow,
    EncryptsMarkerWorkflow,
    QuotaLedgerWorkflow,
)
"""The workflows this plugin adds to a worker."""

UNCACHED_WORKFLOW_TASKS = 1
"""The workflow tasks a worker without a workflow cache (``max_cached_workflows=0``) may hold at
once. Without a cache the SDK (temporalio 1.35) keeps one run in memory, and a workflow task for
another run that arrives while it is held makes the SDK evict that run, cancelling the local
activity it waits for (its ``plan``); the task is never completed, times out, and the same race
repeats on every retry, so calls started together never finish (sdk-rust #1304, #1482). One task
at a time leaves no task to arrive while a ``plan`` runs."""


def check_uncached(config: WorkerConfig) -> None:
    """Refuse a worker without a workflow cache that would take several workflow tasks at once.

    Raises:
        ConfigError: naming both settings.
    """
    if config.get("max_cached_workflows") != 0:
        return
    if config.get("max_concurrent_workflow_tasks") == UNCACHED_WORKFLOW_TASKS:
        return
    raise ConfigError(
        "max_cached_workflows=0 needs max_concurrent_workflow_tasks=1 on a worker running "
        "ToolCallWorkflow: without a cache the SDK cancels a call's plan local activity whenever "
        "another workflow task arrives, and calls started together never finish"
    )


def sandbox_runner(*, isolate: bool = True) -> SandboxedWorkflowRunner:
    """The SDK's sandbox for a parent workflow's worker, sharing our pure modules between
    workflow runs (and, not ``isolate``, the whole ``toolcalls.workflows`` package)."""
    return with_passthrough(SandboxedWorkflowRunner(), isolate=isolate)


def notification_targets(config: Config) -> list[str]:
    """What a waiting call notifies, by name: the webhooks, and the Slack channel when set."""
    targets = [webhook.name for webhook in config.notifications.webhooks]
    return [*targets, SLACK_TARGET] if config.slack is not None else targets


class ServedQueue:
    """What one worker on one task queue serves of a deployment."""

    def __init__(self, config: Config, families: Sequence[AnyFamily]) -> None:
        self.config = config
        self.catalog: Catalog = build_catalog(config, families)
        self.tools = config.served_tools(self.catalog)
        """The enabled activity-backed tools this worker runs."""
        self.workflows = config.serves_workflows
        # ``plan`` runs locally for the workflow, and remotely for parent workflows that plan a
        # call before starting it (per-capability budgets): every activity poller on the
        # deployment's queue must have it.
        self.plan = self.workflows or bool(self.tools and config.queue == config.task_queue)
        self.remote_activities = not (bool(config.queue_tools(self.catalog)) and not self.tools)
        """False when this worker serves none of the tools assigned to its queue: it must not poll
        activity tasks, or it would take their tasks from the workers that serve them."""


class ToolCallsPlugin(SimplePlugin):
    """Serve and start tool calls from your own Temporal client and worker.

    ``Client.connect(..., plugins=[ToolCallsPlugin(config)])`` gives the client the data
    converter; a ``Worker`` built from that client, or given the plugin itself, serves the
    deployment on its task queue: the workflow (unless ``[worker] serve_workflows = false``), the
    ``plan`` activity and the enabled tools assigned to that queue. Without a ``[worker] queue``
    in the configuration, the worker's own task queue stands for the deployment's ``task_queue``.

    ``families`` and ``instances`` (prebuilt objects for tool classes, by class) are for tests and
    for deployments that add families of their own.

    ``tracing`` adds the SDK's OpenTelemetry ``TracingInterceptor`` to the client and the worker
    (one instance per process: ``toolcalls.worker.telemetry.tracing``); by default it is on when the
    ``OTEL_*`` variables configure traces, which then also installs their exporter unless the
    application installed a tracer provider of its own.

    The worker keeps the SDK's sandbox runner and thread-pool executor: the plugin adds our
    workflows, activities, converter and interceptors, and names our pure modules as passthrough
    modules of that sandbox (``toolcalls.worker.fast_path``). ``fast_path=True`` (or ``[worker]
    fast_path = true``) opts into the speed-ups that use SDK internals, on tested SDK versions only.

    Raises:
        ConfigError: the ``[codec]`` keys cannot be read, or an extra the configuration needs is
            missing (``otel`` for tracing).
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        families: Sequence[AnyFamily] = BUILTIN_FAMILIES,
        instances: Mapping[type, object] | None = None,
        environ: Mapping[str, str] | None = None,
        tracing: bool | None = None,
        fast_path: bool | None = None,
        connections: Connections | None = None,
    ) -> None:
        self.config = config if config is not None else Config()
        self._environ = os.environ if environ is None else environ
        self.payloads: PayloadPipeline = payload_pipeline(self.config, self._environ)
        try:
            traced = install_tracer_provider(self._environ) if tracing is None else tracing
            interceptors = [tracing_interceptor()] if traced else None
        except TracingUnavailable as exc:
            raise ConfigError(str(exc)) from None
        super().__init__(
            PLUGIN_NAME, data_converter=self.payloads.converter, interceptors=interceptors
        )
        self.families = tuple(families)
        self.fast_path = fast_path if fast_path is not None else self.config.worker.fast_path
        """Whether workers get the speed-ups that use SDK internals (``worker.fast_path``), on
        tested SDK versions only."""
        self._executors: set[concurrent.futures.Executor] = set()
        self._instances = dict(instances or {})
        self._served: dict[str, ServedQueue] = {}
        self._given_connections = connections
        self._built_connections: dict[int, Connections | None] = {}
        self._closing: dict[Callable[..., Any], list[Any]] = {}
        """What to close when a worker stops, by the first activity this plugin gave it: a
        worker's own activities tell its list from another's on the same queue."""

    def served(self, task_queue: str) -> ServedQueue:
        """What a worker polling ``task_queue`` serves (built once per queue).

        Raises:
            ConfigError: the configuration names another queue for this worker, or is invalid.
        """
        if task_queue not in self._served:
            self._served[task_queue] = ServedQueue(self._deployment(task_queue), self.families)
        return self._served[task_queue]

    def _connections(self, deployment: Config) -> Connections | None:
        """The deployment's ``[connections]`` (built once per configuration), or the ones the
        plugin was given."""
        if self._given_connections is not None:
            return self._given_connections
        key = id(deployment)
        if key not in self._built_connections:
            self._built_connections[key] = deployment_connections(deployment, self._environ)
        return self._built_connections[key]

    def _deployment(self, task_queue: str) -> Config:
        config = self.config
        if config.worker.queue is not None:
            if config.worker.queue != task_queue:
                raise ConfigError(
                    f"worker.queue is {config.worker.queue!r} but this worker polls {task_queue!r}"
                )
            return config
        if task_queue == config.task_queue:
            return config
        return config.model_copy(update={"task_queue": task_queue})

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        config = super().configure_worker(config)
        # A worker takes its converter from its client: one without the pydantic payload
        # converter, the deployment's codec and store could not read a single toolcalls payload.
        client = self._with_converter(config["client"])
        config["client"] = client
        if self.payloads.codec is not None:
            # A client without keys sees this on the task queue and starts nothing (keyless.py).
            identity = config.get("identity") or client.identity
            config["identity"] = f"{identity} {ENCRYPTING_WORKER}"
        served = self.served(config["task_queue"])
        deployment = served.config
        connections = self._connections(deployment)
        built = build_instances(
            served.config,
            served.catalog,
            served.tools,
            self.families,
            prebuilt=self._instances,
            environ=self._environ,
            connections=connections,
        )
        attestor = deployment_attestor(deployment, self._environ)
        runtime = ToolRuntime(
            served.catalog,
            deployment.ceiling_policy(),
            # An inbox user's groups are groups of the approver rules too.
            approvers=with_inbox_groups(deployment.approvers, deployment.inbox.users),
            webhooks=notification_targets(deployment),
            result_bytes=deployment.payloads.result_bytes,
            codec=client.data_converter.payload_codec,
            attestor=attestor,
            instances={**built, **self._instances},
            policy_sets=policy_sets(deployment) if served.plan else (),
            quotas=deployment.quotas,
            connections=connections,
        )
        activities = runtime.tool_activities(served.tools)
        if served.plan:
            local = [name for name in runtime.pure_tools() if name in served.tools]
            activities += runtime.workflow_activities(local if served.workflows else ())
        if served.workflows:
            check_uncached(config)
            # The workflow's own helpers: the standing-grant lookup and the notifications.
            activities += GrantFinder(client, attestor).activities()
            activities += QuotaLedgers(client).activities()
            activities += Notifier(
                deployment.notifications,
                namespace=client.namespace,
                environ=self._environ,
                attestor=attestor,
                channels=self._channels(deployment, client),
            ).activities()
            config["workflows"] = [*config.get("workflows", ()), *OWN_WORKFLOWS]
            isolate = deployment.worker.isolate_workflows
            existing = config.get("workflow_runner")
            if fast_path_applies(self.fast_path):
                runner = fast_runner(existing, isolate=isolate, own=OWN_WORKFLOWS)
                config["workflow_runner"] = runner
                executor = None
                if config.get("workflow_task_executor") is None:
                    # Ours run on the worker's loop, the rest in a pool (worker.activations).
                    executor = fast_executor(runner, config.get("max_concurrent_workflow_tasks"))
                if executor is not None:
                    config["workflow_task_executor"] = executor
                    self._executors.add(executor)
            else:
                config["workflow_runner"] = stock_runner(existing, isolate=isolate)
        config["activities"] = [*config.get("activities", ()), *activities]
        # Closed when this worker stops (``run_worker``); prebuilt instances are the caller's.
        # Built objects serve tools, so a worker that has any has activities of its own.
        closing = [obj for obj in built.values() if hasattr(obj, "aclose")]
        if closing and activities:
            self._closing[activities[0]] = closing
        return config

    def _channels(self, deployment: Config, client: Client) -> dict[str, SlackChannel]:
        """The chats the notify activity posts to, by target name (a prebuilt ``SlackAPI`` in
        ``instances`` stands for the Web API: tests)."""
        if deployment.slack is None:
            return {}
        api = self._instances.get(SlackAPI)
        if not isinstance(api, SlackAPI):
            api = SlackAPI(
                deployment.slack.bot_token_env,
                self._environ,
                timeout_seconds=deployment.slack.timeout_seconds,
            )
        return {SLACK_TARGET: SlackChannel(deployment.slack, api, client)}

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Run the worker; once it has stopped, close what its families built for it (an object
        with an ``aclose`` coroutine method: the document parsers started ahead, say).

        A worker that serves our workflows first keeps the deployment's encryption marker as its
        ``[codec]`` says (``keyless.ensure_marker``)."""
        settings = worker.config(active_config=True)
        if EncryptsMarkerWorkflow in settings.get("workflows", ()):
            await ensure_marker(
                worker.client, settings["task_queue"], encrypts=self.payloads.codec is not None
            )
        try:
            await super().run_worker(worker, next)
        finally:
            executor = worker.config(active_config=True).get("workflow_task_executor")
            if executor in self._executors:
                # The SDK leaves an executor it was given to whoever gave it.
                self._executors.discard(executor)
                executor.shutdown(wait=False)
            for instance in self._built_for(worker):
                await instance.aclose()

    def _built_for(self, worker: Worker) -> list[Any]:
        """What this plugin built for ``worker`` and must close (once: the entry is taken)."""
        for function in worker.config(active_config=True).get("activities", ()):
            closing = self._closing.pop(function, None)
            if closing is not None:
                return closing
        return []

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        config = super().configure_replayer(config)
        # A replay writes nothing to history: its failures (a payload that cannot be fetched,
        # say) keep their messages instead of the encoded form an encrypting worker sends.
        converter = config.get("data_converter")
        if (
            converter is not None
            and converter.failure_converter_class is DefaultFailureConverterWithEncodedAttributes
        ):
            config["data_converter"] = dataclasses.replace(
                converter, failure_converter_class=DefaultFailureConverter
            )
        config["workflows"] = [
            *config.get("workflows", ()),
            ToolCallWorkflow,
            GrantWorkflow,
            ToolCallReconcileWorkflow,
        ]
        # Replay checks determinism, so it always re-imports our workflow code in the sandbox,
        # the SDK's own.
        config["workflow_runner"] = stock_runner(config.get("workflow_runner"), isolate=True)
        return config

    def _with_converter(self, client: Client) -> Client:
        """``client``, or a client on the same connection with this plugin's converter."""
        converter = self.payloads.converter(client.data_converter)
        if converter is client.data_converter:
            return client
        settings = client.config()
        settings["data_converter"] = converter
        return Client(**settings)


def build_instances(
    config: Config,
    catalog: Catalog,
    served: Iterable[str],
    families: Sequence[AnyFamily] = BUILTIN_FAMILIES,
    *,
    prebuilt: Iterable[type] = (),
    environ: Mapping[str, str] | None = None,
    connections: Connections | None = None,
) -> dict[type, object]:
    """Each family's objects for the tools in ``served``, by class, sharing resources (one set of
    file roots, one process ledger); classes in ``prebuilt`` are left to the caller.

    Raises:
        FamilyError: naming the setting when a resource cannot be opened (a root, the checkpoint
            store, the storage database, the state directory).
    """
    skip = set(prebuilt)
    implementations: dict[str, type] = {}
    for name in served:
        spec = catalog.get(name)
        cls = spec.implementation if spec is not None else None
        if cls is not None and cls not in skip:
            implementations[name] = cls
    resources = Resources(
        implementations,
        state_dir=Path(config.state_dir),
        environ=os.environ if environ is None else environ,
        result_bytes=config.payloads.result_bytes,
        catalog=catalog,
        connections=connections,
    )
    built: dict[type, object] = {}
    for family in families:
        settings = config.family_settings(family)
        if any(spec.name in implementations for spec in family.offered(settings)):
            built.update((type(obj), obj) for obj in family.build(settings, resources))
    return built
