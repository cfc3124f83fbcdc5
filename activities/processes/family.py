"""The process family: ``execute_command`` and ``run_shell`` (``[process]``, ``[shell]``,
``[processes]``).

Both run real processes on the worker's host with bounded time and output; ``git``, a family of
its own, shares their process ledger.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta

from pydantic import Field

from toolcalls.activities.family import Deployment, Family, FamilySettings, Resources
from toolcalls.activities.processes.command_args import (
    ExecuteCommandArgs,
    RunShellArgs,
    execute_command_args,
)
from toolcalls.activities.processes.commands import ProcessTools
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.resolve import config_problems
from toolcalls.activities.processes.runner import ProcessResult
from toolcalls.activities.processes.sandbox import Backend
from toolcalls.activities.processes.settings import (
    ProcessesSettings,
    ProcessSettings,
    SandboxSettings,
    ShellSettings,
    sandbox_problems,
)
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import SideEffect

PROCESS_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="execute_command",
        description=(
            "Run a program on the worker's host without a shell: argv as given, an absolute cwd "
            "inside a configured root, and exactly the environment in env ([] inherits nothing; "
            "a bare program name is looked up only in env's PATH). Returns exit_code, stdout, "
            "stderr, truncated, timed_out, canceled, budget_exceeded and duration_seconds; a "
            "non-zero exit or a timeout is a result, not a failure. Not a sandbox."
        ),
        arguments=ExecuteCommandArgs,
        result=ProcessResult,
        side_effect=SideEffect.WRITE,
        capabilities=("process.execute",),
        # The longest command the spec allows (300 s), its kill (grace and reap) and its report;
        # heartbeats carry cancellation and reveal a lost worker within seconds.
        timeouts=Timeouts(start_to_close=timedelta(seconds=330), heartbeat=timedelta(seconds=10)),
        implementation=ProcessTools,
    ),
    ToolSpec(
        name="run_shell",
        description=(
            "Run a script with the deployment's POSIX shell (sh -c) in the deployment's "
            "directory, environment and limits: pipelines, redirects and ordinary shell syntax. "
            "Each call starts a fresh shell. Returns exit_code, stdout, stderr, truncated, "
            "timed_out, canceled, budget_exceeded and duration_seconds; a non-zero exit or a "
            "timeout is a result, not a failure. Not a sandbox."
        ),
        arguments=RunShellArgs,
        result=ProcessResult,
        side_effect=SideEffect.WRITE,
        capabilities=("process.execute", "shell.execute"),
        timeouts=Timeouts(start_to_close=timedelta(seconds=330), heartbeat=timedelta(seconds=10)),
        implementation=ProcessTools,
    ),
)


class ProcessFamilySettings(FamilySettings):
    process: ProcessSettings = Field(default_factory=ProcessSettings)
    shell: ShellSettings = Field(default_factory=ShellSettings)
    processes: ProcessesSettings = Field(default_factory=ProcessesSettings)


def sandboxed_capabilities(
    capabilities: tuple[str, ...], backend: Backend, sandbox: SandboxSettings
) -> tuple[str, ...]:
    """A tool's capabilities under ``backend``: ``process.execute`` (the host) becomes
    ``process.sandboxed``, and a sandbox sharing the network adds ``network.write``."""
    if backend is Backend.HOST:
        return capabilities
    caps = tuple("process.sandboxed" if c == "process.execute" else c for c in capabilities)
    return (*caps, "network.write") if sandbox.network else caps


def process_ledger(resources: Resources) -> ProcessLedger:
    """The worker's one ledger of the process groups it started, for every family that runs
    processes: a successor reaps what a lost worker left running."""
    return resources.shared(
        "state_dir", lambda: ProcessLedger(resources.state_dir / "process-groups")
    )


def _build(settings: ProcessFamilySettings, resources: Resources) -> Iterable[object]:
    if not resources.serves(ProcessTools):
        return []
    return [
        ProcessTools(
            settings.process,
            settings.shell,
            process_ledger(resources),
            result_bytes=resources.result_bytes,
            processes=settings.processes,
        )
    ]


def _problems(settings: ProcessFamilySettings, deployment: Deployment) -> list[str]:
    # Roots, the shell, limits that fit the activity timeout, and the sandbox.
    served = [spec.name for spec in PROCESS_TOOLS if deployment.runs_here([spec.name])]
    enabled = deployment.enabled_of(PROCESS_TOOLS)
    sandbox = (
        sandbox_problems("processes", settings.processes.sandbox, on_this_host=bool(served))
        if settings.processes.backend is Backend.BUBBLEWRAP and enabled
        else []
    )
    return sandbox + config_problems(
        settings.process,
        settings.shell,
        set(deployment.enabled),
        served={spec.name for spec in PROCESS_TOOLS if deployment.runs_here([spec.name])},
        start_to_close={
            spec.name: seconds
            for spec in PROCESS_TOOLS
            if (seconds := deployment.start_to_close(spec.name)) is not None
        },
    )


def _advertise(
    settings: ProcessFamilySettings, tools: tuple[ToolSpec, ...]
) -> tuple[ToolSpec, ...]:
    """With ``process.allow_env``, ``execute_command``'s arguments let those names pass plan."""
    model = execute_command_args(settings.process.allow_env)
    backend, sandbox = settings.processes.backend, settings.processes.sandbox
    offered = []
    for spec in tools:
        if spec.arguments is ExecuteCommandArgs:
            spec = replace(spec, arguments=model)
        if backend is Backend.BUBBLEWRAP and isinstance(spec.capabilities, tuple):
            spec = replace(
                spec,
                capabilities=sandboxed_capabilities(spec.capabilities, backend, sandbox),
                description=spec.description.replace(
                    "Not a sandbox.", "Runs inside a bubblewrap sandbox."
                ).replace("on the worker's host", "in a sandbox on the worker's host"),
            )
        offered.append(spec)
    return tuple(offered)


PROCESSES = Family(
    name="processes",
    settings=ProcessFamilySettings,
    tools=PROCESS_TOOLS,
    build=_build,
    problems=_problems,
    advertise=_advertise,
)
