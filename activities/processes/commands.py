"""``execute_command`` and ``run_shell``: host commands with bounded time and output.

What they can touch: anything the worker's user can. The working directory of ``execute_command``
must resolve (links followed) inside a configured root, but that bounds where a command starts, not
what it reaches; ``run_shell`` runs the deployment's shell in the deployment's directory. Neither
is a sandbox. What they do bound: the program that runs (resolved before approval and checked
again before running), its environment (exactly the one given, nothing inherited, and no variable
that loads code unless the deployment allows it by name), its wall time
(the deployment's ceilings and the call's remaining budget), its captured output, and its
lifetime (the whole process group is killed on timeout, cancellation, worker shutdown and exit; a
ledger lets the next worker kill what a crashed one left). See docs/tools-processes.md.
"""

from __future__ import annotations

import asyncio
import shlex
import socket
from collections.abc import Sequence
from typing import Any

from pydantic_core import to_json
from temporalio import activity

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES, output_bytes
from toolcalls.activities.processes.code_env import loads_code, refusal, refused_env
from toolcalls.activities.processes.command_args import ExecuteCommandArgs, RunShellArgs
from toolcalls.activities.processes.resolve import (
    SHELL_LABELS,
    Problem,
    Resolved,
    limits,
    resolve,
    shell_env,
)
from toolcalls.activities.processes.runner import (
    ProcessLedger,
    ProcessResult,
    ProcessSpec,
    budget_left,
    run_process,
    usable_budget,
)
from toolcalls.activities.processes.settings import ProcessSettings, ShellSettings
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
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
    ) -> None:
        """``result_bytes``: what a result may reach in this deployment (``Resources``)."""
        self.process = process
        self.shell = shell
        self.ledger = ledger
        self.max_result_bytes = output_bytes(result_bytes)
        ledger.reap()

    async def prepare_execute_command(
        self, args: ExecuteCommandArgs, call: CallContext
    ) -> Prepared:
        resolved = await asyncio.to_thread(self._resolve_command, args)
        # The deployment sets none of execute_command's environment: every entry is the call's.
        return _prepared(
            "execute_command", resolved, self.process.kill_grace_seconds, caller_env=list(args.env)
        )

    async def execute_command(self, args: ExecuteCommandArgs, call: CallContext) -> ProcessResult:
        """Run ``argv`` as resolved; a non-zero exit or a timeout is a result."""
        resolved = await asyncio.to_thread(self._resolve_command, args)
        _check_unchanged("execute_command", call, resolved)
        return await self._run("execute_command", resolved.spec, self.process.kill_grace_seconds)

    async def prepare_run_shell(self, args: RunShellArgs, call: CallContext) -> Prepared:
        resolved = await asyncio.to_thread(self._resolve_shell, args)
        return _prepared("run_shell", resolved, self.shell.kill_grace_seconds)

    async def run_shell(self, args: RunShellArgs, call: CallContext) -> ProcessResult:
        """Run ``command`` with the deployment's shell, directory, environment and limits."""
        resolved = await asyncio.to_thread(self._resolve_shell, args)
        _check_unchanged("run_shell", call, resolved)
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
            return resolve(
                args.argv,
                args.cwd,
                args.env,
                timeout,
                output,
                roots=self.process.roots,
            )
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
            return resolve(
                [shell.shell, "-c", args.command],
                str(shell.cwd),
                shell_env(shell),
                shell.timeout_seconds,
                shell.max_output_bytes,
                roots=None,
                labels=SHELL_LABELS,
            )
        except Problem as problem:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR, f"run_shell: {problem.message}"
            ) from None

    async def _run(self, tool: str, spec: ProcessSpec, grace: float) -> ProcessResult:
        budget = budget_left()
        if budget is not None and usable_budget(budget, grace) <= 0:
            raise tool_error(
                ErrorCode.BUDGET_EXCEEDED,
                f"{tool}: {max(budget, 0):.1f} s left of the call's budget: too little to run "
                "and stop a command",
            )
        async with Heartbeat(stdout_bytes=0, stderr_bytes=0, tail="") as beat:
            try:
                result = await run_process(
                    spec, ledger=self.ledger, kill_grace=grace, budget_left=budget, heartbeat=beat
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


def _check_unchanged(tool: str, call: CallContext, resolved: Resolved) -> None:
    """Refuse to run anything other than what the approver saw (when there was a preview)."""
    approved = call.precondition
    if approved is None:
        return
    now = resolved.precondition()
    if approved == now:
        return
    spec = approved.get("spec")
    before: dict[str, Any] = spec if isinstance(spec, dict) else {}
    changed = [
        f"{name} ({_short(before.get(name))} -> {_short(value)})"
        for name, value in now["spec"].items()
        if before.get(name) != value and name != "env"
    ]
    if before.get("env") != now["spec"]["env"]:
        changed.append("env")
    if approved.get("executable") != now["executable"]:
        changed.append(
            f"executable ({_short(approved.get('executable'))} -> {_short(now['executable'])})"
        )
    elif approved.get("identity") != now["identity"]:
        changed.append(f"the file {now['executable']} was replaced or modified")
    raise tool_error(
        ErrorCode.PRECONDITION_FAILED,
        f"{tool}: changed since it was approved: {'; '.join(changed)}; call again to get a new "
        "approval",
    )


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _prepared(
    tool: str, resolved: Resolved, grace: float, *, caller_env: Sequence[str] = ()
) -> Prepared:
    """The approval preview; ``caller_env`` are the variables the call gave, not the deployment."""
    spec = resolved.spec
    host = socket.gethostname()
    lines = [
        f"host:    {host} (a host process, not a sandbox)",
        f"cwd:     {spec.cwd}",
        f"argv:    {shlex.join(spec.argv)}",
    ]
    if resolved.executable != spec.argv[0]:
        lines.append(f"runs:    {resolved.executable}")
    lines += _env_lines(spec.env, caller_env)
    lines.append(
        f"limits:  {spec.timeout_seconds:g} s, then SIGTERM to the process group and SIGKILL "
        f"{grace:g} s later; {spec.max_output_bytes} bytes of stdout and stderr together"
    )
    artifact = PreviewArtifact(
        kind="process",
        title=f"{tool}: {shlex.join(spec.argv)[:120]}",
        text="\n".join(lines),
        data={
            **resolved.precondition(),
            "caller_env": list(caller_env),
            "kill_grace_seconds": grace,
            "host": host,
            "boundary": "host process, not a sandbox",
        },
    )
    return Prepared(preview=[artifact], precondition=resolved.precondition())


def _env_lines(env: dict[str, str], caller_env: Sequence[str]) -> list[str]:
    """The environment as an approver reads it: each variable the call gave marked ``[call]``,
    and the ones that load code (the deployment allows them) marked again."""
    if not env:
        return ["env:     (empty: nothing inherited)"]
    given = set(caller_env)
    lines = [
        "env:     [call]: given by the call, not set by the deployment"
        if given
        else "env:     set by the deployment"
    ]
    for name, value in env.items():
        # A name is quoted too: one holding a newline must not pass for a line of its own.
        entry = f"{shlex.quote(name)}={shlex.quote(value)}"
        if name not in given:
            lines.append(f"  {entry}")
            continue
        what = loads_code(name)
        note = f"   <- loads code ({what}): allowed by process.allow_env" if what else ""
        lines.append(f"  [call] {entry}{note}")
    return lines
