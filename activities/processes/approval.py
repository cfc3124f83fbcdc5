"""What an approver sees of a command, and the check that what runs is what was approved.

The preview shows the resolved argv, directory and environment (each variable the call gave
marked), the limits, and where the command runs: on the host, or inside a bubblewrap sandbox with
every path it grants and its mode, the network and the resource limits. The precondition holds all
of it; ``check_unchanged`` compares it again right before the command runs.
"""

from __future__ import annotations

import shlex
import socket
from collections.abc import Sequence
from typing import Any

from toolcalls.activities.base import CallContext
from toolcalls.activities.errors import tool_error
from toolcalls.activities.processes.code_env import loads_code
from toolcalls.activities.processes.resolve import Resolved
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode


def check_unchanged(tool: str, call: CallContext, resolved: Resolved) -> None:
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
        if before.get(name) != value and name not in ("env", "sandbox")
    ]
    if before.get("env") != now["spec"]["env"]:
        changed.append("env")
    sandbox = grant_change(before.get("sandbox"), now["spec"].get("sandbox"))
    if sandbox:
        changed.append(sandbox)
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


def grant_change(before: Any, now: Any) -> str | None:
    """What changed in the sandbox's grant between approval and run, or ``None``."""
    if before == now:
        return None
    if not isinstance(before, dict) or not isinstance(now, dict):
        was, is_ = ("a sandbox" if before else "the host"), ("a sandbox" if now else "the host")
        return f"where it runs ({was} -> {is_})"
    parts = sorted(key for key in {*before, *now} if before.get(key) != now.get(key))
    return f"the sandbox's grant ({', '.join(parts)})"


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def prepared(
    tool: str, resolved: Resolved, grace: float, *, caller_env: Sequence[str] = ()
) -> Prepared:
    """The approval preview; ``caller_env`` are the variables the call gave, not the deployment."""
    spec = resolved.spec
    host = socket.gethostname()
    boundary = (
        "a host process, not a sandbox"
        if spec.sandbox is None
        else f"inside a bubblewrap sandbox, grant {spec.sandbox.digest()}"
    )
    lines = [
        f"host:    {host} ({boundary})",
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
    if spec.sandbox is not None:
        lines += spec.sandbox.lines()
    artifact = PreviewArtifact(
        kind="process",
        title=f"{tool}: {shlex.join(spec.argv)[:120]}",
        text="\n".join(lines),
        data={
            **resolved.precondition(),
            "caller_env": list(caller_env),
            "kill_grace_seconds": grace,
            "host": host,
            "boundary": "host process, not a sandbox" if spec.sandbox is None else "bubblewrap",
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
