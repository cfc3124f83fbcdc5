"""The git family: the ``git`` tool over one configured repository (``[git]``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta

from pydantic import Field

from toolcalls.activities.base import ToolArgs
from toolcalls.activities.family import Deployment, Family, FamilySettings, Resources
from toolcalls.activities.processes.family import process_ledger, sandboxed_capabilities
from toolcalls.activities.processes.git.args import (
    DESCRIPTION,
    READ_ONLY_DESCRIPTION,
    GitArgs,
    GitReadArgs,
    git_capabilities,
)
from toolcalls.activities.processes.git.tools import GitTools, settings_problems
from toolcalls.activities.processes.runner import ProcessResult
from toolcalls.activities.processes.sandbox import Backend
from toolcalls.activities.processes.settings import GitSettings
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import SideEffect

GIT_CAPABILITY_SETS = (("git.read", "process.execute"), ("git.write", "process.execute"))

GIT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="git",
        description=DESCRIPTION,
        # Without ``git.allow_write`` the deployment advertises ``GitReadArgs`` instead
        # (``_advertise``): add and commit are absent from the enum.
        arguments=GitArgs,
        result=ProcessResult,
        # add and commit change the repository; one attempt for every operation, and a lost
        # worker is ``uncertain``.
        side_effect=SideEffect.WRITE,
        capabilities=git_capabilities,
        capability_sets=GIT_CAPABILITY_SETS,
        # The longest run git.timeout_seconds allows (300 s), its kill (grace and reap), reading
        # the repository's filter configuration (5 s) and the report.
        timeouts=Timeouts(start_to_close=timedelta(seconds=330), heartbeat=timedelta(seconds=10)),
        implementation=GitTools,
    ),
)


class GitFamilySettings(FamilySettings):
    git: GitSettings = Field(default_factory=GitSettings)


def _build(settings: GitFamilySettings, resources: Resources) -> Iterable[object]:
    if not resources.serves(GitTools):
        return []
    return [GitTools(settings.git, process_ledger(resources))]


def _problems(settings: GitFamilySettings, deployment: Deployment) -> list[str]:
    if "git" not in deployment.enabled:
        return []
    return settings_problems(settings.git, on_this_host=deployment.runs_here(["git"]))


def _advertise(settings: GitFamilySettings, tools: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
    """Without ``git.allow_write``, ``git``'s operations are only status, diff, log and show:
    add and commit are absent from the schema."""
    git = settings.git
    if not git.allow_write:
        tools = tuple(
            replace(spec, arguments=GitReadArgs, description=READ_ONLY_DESCRIPTION)
            for spec in tools
        )
    if git.backend is Backend.HOST:
        return tools

    def capabilities(args: ToolArgs) -> tuple[str, ...]:
        assert isinstance(args, GitArgs | GitReadArgs)
        return sandboxed_capabilities(git_capabilities(args), git.backend, git.sandbox)

    sets = tuple(
        sandboxed_capabilities(caps, git.backend, git.sandbox) for caps in GIT_CAPABILITY_SETS
    )
    return tuple(replace(spec, capabilities=capabilities, capability_sets=sets) for spec in tools)


GIT = Family(
    name="git",
    settings=GitFamilySettings,
    tools=GIT_TOOLS,
    build=_build,
    problems=_problems,
    advertise=_advertise,
)
