"""``GitTools``: the ``git`` activity and its approval preview."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from temporalio import activity

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat, PromptHeartbeat
from toolcalls.activities.processes.commands import fit
from toolcalls.activities.processes.git.args import GitCall
from toolcalls.activities.processes.git.command import (
    FILTER_LISTING,
    env_problems,
    environment,
    filter_drivers,
    filter_overrides,
    global_options,
    operation_argv,
)
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.runner import (
    ProcessResult,
    ProcessSpec,
    budget_left,
    run_process,
    usable_budget,
)
from toolcalls.activities.processes.sandbox import Backend, SandboxFailed, SandboxGrant
from toolcalls.activities.processes.settings import (
    MAX_OUTPUT_BYTES,
    MAX_TIMEOUT_SECONDS,
    GitSettings,
    sandbox_problems,
)
from toolcalls.activities.progress import ProgressPublisher, published
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode

LISTING_TIMEOUT_SECONDS = 5.0
"""Reading the filter configuration; well inside the activity's 10 s heartbeat timeout."""
LISTING_MAX_BYTES = 65_536
MAX_FILTER_DRIVERS = 64
"""More drivers than this is not a repository to run git in unattended."""
MAX_KILL_GRACE_SECONDS = 10.0
"""With the 300 s timeout ceiling, the kill and the configuration read fit the catalog's 330 s."""


class GitTools:
    """``git`` in one configured repository directory.

    Trust model: the deployment chooses the directory, the executable, the environment and the
    limits; the model chooses one of six operations and literal paths, a revision or a message
    within it. Repository configuration is not trusted to name programs (see ``command``), but
    otherwise applies: host execution in a repository, or a bubblewrap sandbox (``backend``).
    """

    def __init__(self, settings: GitSettings, ledger: ProcessLedger | None = None) -> None:
        """Check and resolve ``settings``; ``ledger`` records (and first reaps) process groups.

        Raises:
            ValueError: naming each setting at fault.
        """
        problems = settings_problems(settings, on_this_host=True)
        if problems:
            raise ValueError("; ".join(problems))
        assert settings.cwd is not None
        self.settings = settings
        self.env = environment(settings)
        executable = resolve_executable(settings.executable, self.env.get("PATH"))
        assert executable is not None
        self.executable = executable
        self.cwd = str(settings.cwd.resolve())
        self.ledger = ledger
        if ledger is not None:
            ledger.reap()  # groups a worker that is gone left running

    async def prepare_git(self, args: GitCall, call: CallContext) -> Prepared:
        """The exact process a human approves; ``git`` runs it only if it is still the same."""
        self._check_allowed(args)
        async with Heartbeat(operation=args.operation, phase="reading configuration"):
            try:
                spec = await self._spec(args)
            except SandboxFailed as exc:
                raise tool_error(ErrorCode.EXECUTION_FAILED, f"git: {exc}") from None
        text = shlex.join(spec.argv)
        if spec.sandbox is not None:
            text += f"\nin a bubblewrap sandbox, grant {spec.sandbox.digest()}\n"
            text += "\n".join(spec.sandbox.lines())
        return Prepared(
            preview=[
                PreviewArtifact(
                    kind="process",
                    title=f"git {args.operation} in {spec.cwd}",
                    text=text,
                    data=spec.shown(),
                )
            ],
            precondition={"process": spec.shown()},
        )

    async def git(self, args: GitCall, call: CallContext) -> ProcessResult:
        """Run one git operation; a non-zero exit or a timeout is a result, not a failure."""
        self._check_allowed(args)
        budget = budget_left()
        if budget is not None and usable_budget(budget, self.settings.kill_grace_seconds) <= 0:
            raise tool_error(
                ErrorCode.BUDGET_EXCEEDED,
                f"git: {args.operation}: {max(budget, 0):.1f} s left of the call's budget: too "
                "little to run and stop git",
            )
        try:
            return await self._run(args, call)
        except SandboxFailed as exc:
            raise tool_error(ErrorCode.EXECUTION_FAILED, f"git: {args.operation}: {exc}") from None
        except OSError as exc:  # the repository or the executable went away after start
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"git: {args.operation}: cannot run {self.executable} in {self.cwd}: "
                f"{(exc.strerror or str(exc)).lower()}",
            ) from None

    async def _run(self, args: GitCall, call: CallContext) -> ProcessResult:
        async with PromptHeartbeat(operation=args.operation, phase="reading configuration") as beat:
            spec = await self._spec(args)
            approved = (call.precondition or {}).get("process")
            if call.precondition is not None and approved != spec.shown():
                raise tool_error(
                    ErrorCode.PRECONDITION_FAILED,
                    f"git: {args.operation}: the command is no longer the approved one "
                    f"({_difference(approved, spec)} changed); call again for a new approval",
                )
            beat.update(phase="running")
            try:
                async with published(ProgressPublisher.for_activity()) as progress:
                    result = await run_process(
                        spec,
                        ledger=self.ledger,
                        kill_grace=self.settings.kill_grace_seconds,
                        budget_left=budget_left(),
                        heartbeat=beat,
                        progress=progress,
                    )
            except asyncio.CancelledError as exc:
                partial = exc.args[0] if exc.args else None
                if not isinstance(partial, ProcessResult):
                    raise
                raise _interrupted(args, partial) from None
        return fit(result)

    def _check_allowed(self, args: GitCall) -> None:
        if args.writes and not self.settings.allow_write:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"git: {args.operation}: writing is disabled in this deployment "
                "(use status, diff, log or show)",
                fixable_args=["operation"],
            )

    async def _spec(self, args: GitCall) -> ProcessSpec:
        """The process for ``args``, with this repository's filter drivers neutralised."""
        grant = await asyncio.to_thread(self._grant)
        drivers = await self._filter_drivers(grant)
        return ProcessSpec(
            argv=[self.executable, *global_options(), *operation_argv(args)],
            cwd=self.cwd,
            env={**self.env, **filter_overrides(drivers)},
            timeout_seconds=self.settings.timeout_seconds,
            max_output_bytes=self.settings.max_output_bytes,
            sandbox=grant,
        )

    def _grant(self) -> SandboxGrant | None:
        """The sandbox git runs in (the repository read-only unless writes are allowed), or
        ``None`` on the host."""
        if self.settings.backend is Backend.HOST:
            return None
        repository = [Path(self.cwd)]
        try:
            grant = self.settings.sandbox.grant(
                writable=repository if self.settings.allow_write else [],
                read_only=[] if self.settings.allow_write else repository,
            )
        except ValueError as exc:
            raise tool_error(ErrorCode.CONFIGURATION_ERROR, f"git: git.sandbox: {exc}") from None
        if not grant.visible(os.path.realpath(self.executable)):
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"git: git.executable: {self.executable}: not visible inside the sandbox",
            )
        return grant

    async def _filter_drivers(self, grant: SandboxGrant | None) -> list[str]:
        """The filter drivers the repository's configuration defines; fails closed."""
        listing = ProcessSpec(
            argv=[self.executable, "--no-pager", *FILTER_LISTING],
            cwd=self.cwd,
            env=self.env,
            timeout_seconds=LISTING_TIMEOUT_SECONDS,
            max_output_bytes=LISTING_MAX_BYTES,
            sandbox=grant,
        )
        try:
            result = await run_process(
                listing, ledger=self.ledger, kill_grace=0.0, budget_left=budget_left()
            )
        except asyncio.CancelledError:
            raise tool_error(ErrorCode.CANCELED, "git: canceled before git ran") from None
        if result.budget_exceeded:
            raise tool_error(
                ErrorCode.BUDGET_EXCEEDED, "git: the call's budget ran out before git ran"
            )
        # 1 means no filter key at all; anything else leaves the configuration unknown.
        if result.exit_code not in (0, 1) or result.truncated:
            reason = (
                "timed out"
                if result.timed_out
                else "output too long"
                if result.truncated
                else _first_line(result.stderr) or f"exit code {result.exit_code}"
            )
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"git: cannot read the repository's filter configuration: {reason}",
            )
        drivers = filter_drivers(result.stdout) if result.exit_code == 0 else []
        if len(drivers) > MAX_FILTER_DRIVERS:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"git: the repository configures {len(drivers)} filter drivers; "
                f"the limit is {MAX_FILTER_DRIVERS}",
            )
        return drivers


def settings_problems(settings: GitSettings, *, on_this_host: bool) -> list[str]:
    """What is wrong with ``settings``, each naming its key; the directory and the executable
    are looked for only ``on_this_host`` (the worker that runs the tool)."""
    problems = []
    cwd = settings.cwd
    if cwd is None:
        problems.append("git.cwd: git needs the repository directory")
    elif not cwd.is_absolute():
        problems.append(f"git.cwd: {cwd} is not an absolute path")
    elif on_this_host and not cwd.is_dir():
        problems.append(f"git.cwd: {cwd} is not an existing directory")
    path = settings.env.get("PATH") if settings.env is not None else os.defpath
    if on_this_host and resolve_executable(settings.executable, path) is None:
        where = (
            ""
            if "/" in settings.executable
            else f" on PATH {path!r}"
            if path
            else " (git.env has no PATH)"
        )
        problems.append(f"git.executable: {settings.executable!r} is not an executable file{where}")
    problems += env_problems(settings.env)
    if settings.backend is Backend.BUBBLEWRAP:
        problems += sandbox_problems("git", settings.sandbox, on_this_host=on_this_host)
    if settings.timeout_seconds > MAX_TIMEOUT_SECONDS:
        problems.append(f"git.timeout_seconds: at most {MAX_TIMEOUT_SECONDS:g}")
    if settings.kill_grace_seconds > MAX_KILL_GRACE_SECONDS:
        problems.append(f"git.kill_grace_seconds: at most {MAX_KILL_GRACE_SECONDS:g}")
    if settings.max_output_bytes > MAX_OUTPUT_BYTES:
        problems.append(f"git.max_output_bytes: at most {MAX_OUTPUT_BYTES}")
    return problems


def resolve_executable(executable: str, path: str | None) -> str | None:
    """The absolute path git will run as: a path as given, a bare name looked up on ``path``."""
    if "/" in executable:
        found = (
            executable if os.path.isfile(executable) and os.access(executable, os.X_OK) else None
        )
    else:
        found = shutil.which(executable, path=path) if path else None
    return os.path.abspath(found) if found else None


def _interrupted(args: GitCall, partial: ProcessResult) -> Exception:
    """The error for a run cut short by cancellation or by the worker shutting down."""
    output = fit(partial).model_dump(mode="json")
    if activity.is_worker_shutdown() and args.writes:
        # The process was killed part-way through a write: the index or the branch may or may
        # not have changed, which is exactly what ``uncertain`` tells the caller.
        return tool_error(
            ErrorCode.UNCERTAIN,
            f"git: {args.operation}: the worker shut down while git ran; the change may have "
            "happened: inspect before calling again",
            output=output,
        )
    return tool_error(ErrorCode.CANCELED, f"git: {args.operation}: canceled", output=output)


def _difference(approved: Any, spec: ProcessSpec) -> str:
    if not isinstance(approved, dict):
        return "everything"
    now = spec.shown()
    changed = [key for key in now if approved.get(key) != now[key]]
    return ", ".join(changed) or "nothing"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""
