"""``execute_command`` and ``run_shell``: host commands with bounded time and output.

What they can touch: with the host backend, anything the worker's user can. The working directory
of ``execute_command`` must resolve (links followed) inside a configured root, but that bounds
where a command starts, not what it reaches; ``run_shell`` runs the deployment's shell in the
deployment's directory. With ``[processes] backend = "bubblewrap"`` both run inside a sandbox that
shows only the read-only system and their roots (``sandbox``), and the approver sees its grant.
What they do bound: the program that runs (resolved before approval and checked
again before running), its environment (exactly the one given, nothing inherited, and no variable
that loads code unless the deployment allows it by name), its wall time
(the deployment's ceilings and the call's remaining budget), its captured output, and its
lifetime (the whole process group is killed on timeout, cancellation, worker shutdown and exit; a
ledger lets the next worker kill what a crashed one left). See docs/tools-processes.md.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic_core import to_json
from temporalio import activity

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import PromptHeartbeat
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES, output_bytes
from toolcalls.activities.processes.approval import check_unchanged, prepared
from toolcalls.activities.processes.code_env import refusal, refused_env
from toolcalls.activities.processes.command_args import ExecuteCommandArgs, RunShellArgs
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.activities.processes.resolve import (
    SHELL_LABELS,
    Labels,
    Problem,
    Resolved,
    confine,
    limits,
    resolve,
    shell_env,
)
from toolcalls.activities.processes.runner import (
    ProcessResult,
    ProcessSpec,
    budget_left,
    run_process,
    usable_budget,
)
from toolcalls.activities.processes.sandbox import Backend, SandboxFailed
from toolcalls.activities.processes.settings import (
    ProcessesSettings,
    ProcessSettings,
    ShellSettings,
)
from toolcalls.activities.progress import ProgressPublisher, published
from toolcalls.workflows.models.approval import Prepared
from toolcalls.workflows.models.call import ErrorCode

MAX_RESULT_BYTES = output_bytes(MAX_PAYLOAD_BYTES)
"""A result's JSON stays below the central payload cap (``MAX_PAYLOAD_BYTES``, 1 MiB) even when
escaping (control characters, replaced bytes) makes it larger than the output it carries. With a
payload store (``[payloads]``) the cap is the deployment's result limit, and this grows with it."""


class ProcessTools:
    """Runs commands on this worker's host for ``execute_command`` and ``run_shell``.

    Trust model: the model chooses the argv, cwd, environment and limits of ``execute_command``
    (within the deployment's roots, ceilings and allowed variables) and only the script of
    ``run_shell``; the deployment chooses everything else. Resolved commands are shown to approvers
    exactly as they will run, with every variable the call gave marked. Building the family kills
    the process groups a crashed worker left (the ledger).
    """

    def __init__(
        self,
        process: ProcessSettings,
        shell: ShellSettings,
        ledger: ProcessLedger,
        *,
        result_bytes: int = MAX_PAYLOAD_BYTES,
        processes: ProcessesSettings | None = None,
    ) -> None:
        """``result_bytes``: what a result may reach in this deployment (``Resources``);
        ``processes``: the backend, host (the default) or a bubblewrap sandbox."""
        self.process = process
        self.shell = shell
        self.processes = processes or ProcessesSettings()
        self.ledger = ledger
        self.max_result_bytes = output_bytes(result_bytes)
        ledger.reap()

    async def prepare_execute_command(
        self, args: ExecuteCommandArgs, call: CallContext
    ) -> Prepared:
        resolved = await asyncio.to_thread(self._resolve_command, args)
        # The deployment sets none of execute_command's environment: every entry is the call's.
        return prepared(
            "execute_command", resolved, self.process.kill_grace_seconds, caller_env=list(args.env)
        )

    async def execute_command(self, args: ExecuteCommandArgs, call: CallContext) -> ProcessResult:
        """Run ``argv`` as resolved; a non-zero exit or a timeout is a result."""
        resolved = await asyncio.to_thread(self._resolve_command, args)
        check_unchanged("execute_command", call, resolved)
        return await self._run("execute_command", resolved.spec, self.process.kill_grace_seconds)

    async def prepare_run_shell(self, args: RunShellArgs, call: CallContext) -> Prepared:
        resolved = await asyncio.to_thread(self._resolve_shell, args)
        return prepared("run_shell", resolved, self.shell.kill_grace_seconds)

    async def run_shell(self, args: RunShellArgs, call: CallContext) -> ProcessResult:
        """Run ``command`` with the deployment's shell, directory, environment and limits."""
        resolved = await asyncio.to_thread(self._resolve_shell, args)
        check_unchanged("run_shell", call, resolved)
        return await self._run("run_shell", resolved.spec, self.shell.kill_grace_seconds)

    def _resolve_command(self, args: ExecuteCommandArgs) -> Resolved:
        try:
            timeout, output = limits(args.timeout_seconds, args.max_output_bytes, self.process)
            if not self.process.roots:
                raise tool_error(
                    ErrorCode.CONFIGURATION_ERROR,
                    "execute_command: process.roots: no root is configured",
                )
            # The plan checked env with the catalog's model; this worker's settings decide.
            refused = refused_env(args.env, self.process.allow_env)
            if refused:
                raise Problem(["env"], f"env: {refusal(refused)}")
            resolved = resolve(
                args.argv,
                args.cwd,
                args.env,
                timeout,
                output,
                roots=self.process.roots,
            )
            return self._confine("execute_command", resolved, self.process.roots)
        except Problem as problem:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"execute_command: {problem.message}",
                fixable_args=problem.fields,
            ) from None

    def _resolve_shell(self, args: RunShellArgs) -> Resolved:
        shell = self.shell
        if shell.cwd is None:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR, "run_shell: shell.cwd: no directory is configured"
            )
        try:
            resolved = resolve(
                [shell.shell, "-c", args.command],
                str(shell.cwd),
                shell_env(shell),
                shell.timeout_seconds,
                shell.max_output_bytes,
                roots=None,
                labels=SHELL_LABELS,
            )
            return self._confine("run_shell", resolved, [shell.cwd], SHELL_LABELS)
        except Problem as problem:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR, f"run_shell: {problem.message}"
            ) from None

    def _confine(
        self, tool: str, resolved: Resolved, roots: list[Path], labels: Labels | None = None
    ) -> Resolved:
        """``resolved`` inside the deployment's sandbox, or as it is with the host backend."""
        if self.processes.backend is Backend.HOST:
            return resolved
        try:
            grant = self.processes.sandbox.grant(writable=roots, read_only=[])
        except ValueError as exc:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR, f"{tool}: processes.sandbox: {exc}"
            ) from None
        return confine(resolved, grant, labels or Labels())

    async def _run(self, tool: str, spec: ProcessSpec, grace: float) -> ProcessResult:
        budget = budget_left()
        if budget is not None and usable_budget(budget, grace) <= 0:
            raise tool_error(
                ErrorCode.BUDGET_EXCEEDED,
                f"{tool}: {max(budget, 0):.1f} s left of the call's budget: too little to run "
                "and stop a command",
            )
        async with (
            PromptHeartbeat(stdout_bytes=0, stderr_bytes=0, tail="") as beat,
            published(ProgressPublisher.for_activity()) as progress,
        ):
            try:
                result = await run_process(
                    spec,
                    ledger=self.ledger,
                    kill_grace=grace,
                    budget_left=budget,
                    heartbeat=beat,
                    progress=progress,
                )
            except asyncio.CancelledError as exc:
                partial = exc.args[0] if exc.args else None
                if not isinstance(partial, ProcessResult):
                    raise
                why = "the worker is shutting down" if activity.is_worker_shutdown() else "canceled"
                raise tool_error(
                    ErrorCode.CANCELED,
                    f"{tool}: {why}; the process group was killed",
                    output=fit(partial, self.max_result_bytes).model_dump(mode="json"),
                ) from None
            except SandboxFailed as exc:
                raise tool_error(ErrorCode.EXECUTION_FAILED, f"{tool}: {exc}") from None
            except OSError as exc:
                raise tool_error(
                    ErrorCode.EXECUTION_FAILED,
                    f"{tool}: {spec.argv[0]}: cannot run: {(exc.strerror or str(exc)).lower()}",
                ) from None
        return fit(result, self.max_result_bytes)


def fit(result: ProcessResult, limit: int = MAX_RESULT_BYTES) -> ProcessResult:
    """``result`` with stdout/stderr cut (and ``truncated`` set) until its JSON is at most
    ``limit`` bytes."""
    if len(result.model_dump_json().encode()) <= limit:
        return result
    for name in sorted(("stdout", "stderr"), key=lambda n: -len(getattr(result, n))):
        text: str = getattr(result, name)
        result = result.model_copy(update={name: "", "truncated": True})
        room = limit - len(result.model_dump_json().encode())
        if room <= 0:
            continue
        # The longest prefix whose JSON fits: escaping makes a character cost 1 to 6 bytes.
        low, high = 0, min(len(text), room)
        while low < high:
            middle = (low + high + 1) // 2
            if len(to_json(text[:middle])) - 2 <= room:
                low = middle
            else:
                high = middle - 1
        return result.model_copy(update={name: text[:low]})
    return result
