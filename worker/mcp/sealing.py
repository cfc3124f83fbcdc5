"""The one key ``toolcalls mcp`` seals with, and the task ids it seals.

``requestState`` (the 2026-07-28 ``input_required`` rounds, ``toolcalls.worker.mcp.rounds``) and
task ids (``toolcalls.worker.mcp.tasks``) are sealed by the SDK's request-state codec: AES-256-GCM
under a key derived (HKDF-SHA256) from the secret in the environment variable ``[mcp]
state_key_env`` (``TOOLCALLS_MCP_STATE_KEY``, 32 characters or more). With the variable set, what
one server process sealed another opens: a task id and a form's state survive a restart of the
server, and several servers of one deployment share them. Without it the process draws a key of its
own, and neither outlives the process.

A task id seals the call's workflow id and a digest of the client's principal (who the request was
authenticated as): it cannot be guessed, read or altered, and it opens only for the principal it was
sealed for. Every failure to open one reads the same (``None``), so a caller learns nothing about
why.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping

from mcp.server.request_state import (
    InvalidRequestState,
    RequestStateCodec,
    RequestStateSecurity,
)

from toolcalls.worker.config import ConfigError

MIN_KEY_CHARS = 32
TASK_KIND = "toolcalls/task"
"""What a sealed task id says it is: a ``requestState`` sealed under the same key is not one."""

log = logging.getLogger("toolcalls.mcp")


def state_security(
    environ: Mapping[str, str], variable: str, *, ttl: float, audience: str
) -> RequestStateSecurity:
    """The sealing policy: the key in ``variable``, or one of this process's own when unset.

    Raises:
        ConfigError: the variable holds a key shorter than ``MIN_KEY_CHARS``.
    """
    key = environ.get(variable, "").strip()
    if not key:
        log.info(
            "%s is unset: task ids and form states are sealed with a key of this process, and "
            "neither survives its restart",
            variable,
        )
        return RequestStateSecurity.ephemeral(ttl=ttl, audience=audience)
    if len(key) < MIN_KEY_CHARS:
        raise ConfigError(
            f"mcp.state_key_env: the key in {variable} has fewer than {MIN_KEY_CHARS} characters"
        )
    return RequestStateSecurity(keys=[key], ttl=ttl, audience=audience)


class TaskIds:
    """Seal a workflow id for a principal into a task id, and open it again."""

    def __init__(self, codec: RequestStateCodec) -> None:
        self.codec = codec

    def seal(self, workflow_id: str, principal: str) -> str:
        payload = {"k": TASK_KIND, "w": workflow_id, "p": _digest(principal)}
        return self.codec.seal(json.dumps(payload, separators=(",", ":")).encode())

    def open(self, task_id: str, principal: str) -> str | None:
        """The workflow id ``task_id`` names, if it was sealed here for ``principal``."""
        try:
            data = json.loads(self.codec.unseal(task_id))
        except (InvalidRequestState, ValueError):
            return None
        if not isinstance(data, dict) or data.get("k") != TASK_KIND:
            return None
        workflow_id = data.get("w")
        if not isinstance(workflow_id, str) or data.get("p") != _digest(principal):
            return None
        return workflow_id


def _digest(principal: str) -> str:
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()
