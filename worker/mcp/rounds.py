"""Asking through the client on the 2026-07-28 protocol: ``input_required`` rounds.

That protocol lets no server send a request to the client, so a form cannot be elicited while the
request waits. Instead the wait ends and the request's result is an ``InputRequiredResult``: the
form as an embedded elicitation, and a ``requestState`` naming the call. The client shows the
form and sends the same ``tools/call`` again with the user's response and the state; the server
gives the call the response and goes on waiting on the same call.

The state is sealed by the SDK's ``RequestStateBoundary`` (AES-GCM under the server's sealing key,
``toolcalls.worker.mcp.sealing``, bound to the tool and its arguments, ``STATE_TTL_SECONDS``
long), so what comes back is what this deployment minted: a client can neither forge a state
naming another call nor replay one on other arguments. Without ``[mcp] state_key_env`` the key is
the process's own, and a state minted before the server restarted is refused (``-32602``); the
client then calls again, and its idempotency key finds the call.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import mcp_types as types
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError

from toolcalls.worker.mcp.elicit import Form
from toolcalls.worker.mcp.follow import deliver
from toolcalls.worker.mcp.front import Front

INPUT_KEY = "toolcalls"
"""The key of the one form an ``input_required`` result holds."""
STATE_TTL_SECONDS = 24 * 3600
"""How long a user may take to answer a form: an approval waits 24 hours by default."""

log = logging.getLogger("toolcalls.mcp")


def state_boundary(
    audience: str, security: RequestStateSecurity | None = None
) -> RequestStateBoundary:
    """The server middleware that seals and checks ``requestState`` (under ``security``, the
    server's sealing key; a key of the process's own without it)."""
    if security is None:
        security = RequestStateSecurity.ephemeral(ttl=STATE_TTL_SECONDS, audience=audience)
    return RequestStateBoundary(security, default_audience=audience)


@dataclass(frozen=True)
class Round:
    """What a ``requestState`` says: the call, the form it showed, the forms shown before."""

    workflow_id: str
    form: Form
    asked: tuple[str, ...]

    def dumps(self) -> str:
        form = self.form
        return json.dumps(
            {
                "workflow_id": self.workflow_id,
                "form": [form.kind, form.request_id, form.digest],
                "asked": list(self.asked),
            }
        )

    @classmethod
    def loads(cls, text: str) -> Round:
        """The round of a state this process minted (the boundary has verified it)."""
        try:
            data = json.loads(text)
            kind, request_id, digest = data["form"]
            return cls(
                workflow_id=str(data["workflow_id"]),
                form=Form(kind, str(request_id), digest, "", {}),
                asked=tuple(str(rid) for rid in data["asked"]),
            )
        except (ValueError, KeyError, TypeError):
            raise MCPError(code=types.INVALID_PARAMS, message="malformed requestState") from None


def input_required(workflow_id: str, form: Form, asked: set[str]) -> types.InputRequiredResult:
    """The result that hands ``form`` to the client and names the call to come back to."""
    state = Round(workflow_id, form, tuple(sorted(asked)))
    params: types.ElicitRequestFormParams | types.ElicitRequestURLParams
    if form.url is not None:
        params = types.ElicitRequestURLParams(message=form.message, url=form.url)
    else:
        params = types.ElicitRequestFormParams(message=form.message, requested_schema=form.schema)
    return types.InputRequiredResult(
        input_requests={INPUT_KEY: types.ElicitRequest(params=params)},
        request_state=state.dumps(),
    )


async def resume(front: Front, params: types.CallToolRequestParams) -> Round | None:
    """The round a retried request continues, its response given to the call; ``None`` for a
    request that continues none."""
    if params.request_state is None:
        return None
    round_ = Round.loads(params.request_state)
    response = (params.input_responses or {}).get(INPUT_KEY)
    if isinstance(response, types.ElicitResult):
        note = await deliver(front, round_.workflow_id, round_.form, response)
        if note:
            log.info("%s: %s", round_.workflow_id, note)
    return round_
