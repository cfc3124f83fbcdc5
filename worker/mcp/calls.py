"""``tools/call``: start (or join) the call's ``ToolCallWorkflow`` and wait for its result.

The request names its call (``toolcalls.worker.mcp.front``), so a retried request never starts a
second one. While the call runs or waits, a ``Follower`` reports progress and asks through the
client; on 2026-07-28 a form ends the request with ``input_required`` and the client's retry,
carrying the user's response, continues the same call (``toolcalls.worker.mcp.rounds``).
What becomes of the request does not decide the call, with one exception:

- an MCP cancellation (``notifications/cancelled``) cancels the workflow: a running process is
  killed with its whole group, and the call ends ``canceled``;
- a client that disconnects, a request that times out in the client, a server that stops: the
  call goes on in Temporal, and a later request with the same idempotency key gets its result.

A call no toolcalls worker could serve is not started: the model gets ``tool_unavailable`` at
once instead of a request that hangs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.worker.mcp.elicit import Form
from toolcalls.worker.mcp.follow import Follower
from toolcalls.worker.mcp.front import Front
from toolcalls.worker.mcp.oauth import verified_principal
from toolcalls.worker.mcp.requester import request_front
from toolcalls.worker.mcp.results import call_result, tool_error
from toolcalls.worker.mcp.rounds import input_required, resume
from toolcalls.worker.mcp.tasks import Tasks, declares_tasks
from toolcalls.workflows.models.call import ErrorCode, ToolCallRequest, ToolCallResult
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.reach.client import CallConflict, PayloadTooLarge, Started

META_FRONT = {"front": "mcp"}
"""``ToolCallRequest.metadata`` of every call started here, for correlation in history; beside it
``mcp_user`` (the identity the server is configured with, or an OAuth token's principal) and
``mcp_client`` (the name the client gave in ``clientInfo``), which the inbox shows as who asked."""
MAX_CLIENT_NAME_CHARS = 200
"""A client's name is its own claim: it is kept to this many characters."""

log = logging.getLogger("toolcalls.mcp")


def principal_of(ctx: Any) -> Principal | None:
    """Whom an MCP request acts for: the principal of the request's verified OAuth access token
    (``toolcalls.worker.mcp.oauth``); ``None`` over stdio or with the static bearer token.

    Raises:
        MCPError: the token's principal is not a valid ``Principal`` id (no call starts).
    """
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    principal = verified_principal(scope) if isinstance(scope, Mapping) else None
    if principal is None:
        return None
    try:
        return Principal(id=principal)
    except ValidationError:
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"the token's principal is not a valid principal id: {principal[:80]!r}",
        ) from None


async def call_tool(
    front: Front, ctx: Any, params: types.CallToolRequestParams, tasks: Tasks | None = None
) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
    """Run one ``tools/call`` (see the module docstring); with ``tasks``, a request that declares
    the Tasks extension gets a task for a call that goes on (``toolcalls.worker.mcp.tasks``).

    Raises:
        MCPError: an unknown tool, a malformed idempotency key, or a key that names another call
            (protocol errors, not tool errors: the request itself is wrong).
    """
    front = request_front(front, ctx)  # an OAuth request: its principal and its profile
    if not front.offers(params.name):
        available = ", ".join(tool.name for tool in front.tools)
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"unknown tool {params.name!r}; available: {available}",
        )
    metadata = dict(META_FRONT)
    if front.identity:
        metadata["mcp_user"] = front.identity
    client = client_name(ctx)
    if client:
        metadata["mcp_client"] = client
    request = ToolCallRequest(
        tool=params.name,
        arguments=params.arguments or {},
        metadata=metadata,
        profile=front.profile,
        principal=principal_of(ctx),
    )
    try:
        resumed = await resume(front, params)
        if resumed is not None:  # a retry carrying the user's response to a form (2026-07-28)
            workflow_id = resumed.workflow_id
        else:
            session = front.session_of(ctx.request)
            workflow_id = front.workflow_id(ctx.meta, session, ctx.request_id)
        started = await _start(front, request, workflow_id)
    except CallConflict as exc:
        raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
    except PayloadTooLarge as exc:
        return tool_error(ErrorCode.INVALID_ARGUMENTS, f"{params.name}: {exc}")
    except RPCError as exc:
        return tool_error(ErrorCode.TOOL_UNAVAILABLE, f"temporal: {exc.message}", retryable=True)
    if isinstance(started, types.CallToolResult):
        return started
    if started.existing:
        log.info("%s: joined the existing call (%s)", workflow_id, params.name)
    if tasks is not None and declares_tasks(ctx):
        return await tasks.answer(ctx, started)
    follower = Follower(front, ctx, workflow_id, resumed.asked if resumed else ())
    try:
        outcome = await _wait(follower, started)
    except anyio.get_cancelled_exc_class():
        if peer_cancelled(ctx):
            log.info("%s: canceled by the client", workflow_id)
            with anyio.CancelScope(shield=True):
                await front.calls.cancel(workflow_id)
        raise
    if isinstance(outcome, Form):
        return input_required(workflow_id, outcome, follower.asked)
    if isinstance(outcome, str):
        return tool_error(ErrorCode.INTERNAL, outcome, workflow_id=workflow_id)
    return call_result(outcome)


async def _start(
    front: Front, request: ToolCallRequest, workflow_id: str
) -> Started | types.CallToolResult:
    """The call: joined when the id names one, started when a worker can serve it."""
    calls = front.calls
    if not await calls.worker_serving(calls.task_queue):
        try:
            await calls.handle(workflow_id).describe()
        except RPCError as exc:
            if exc.status is not RPCStatusCode.NOT_FOUND:
                raise
            return tool_error(
                ErrorCode.TOOL_UNAVAILABLE,
                f"no toolcalls worker is serving task queue {calls.task_queue!r}; nothing was "
                "started (run `toolcalls worker` for this deployment)",
                retryable=True,
            )
    return await calls.start_or_join(request, workflow_id=workflow_id)


async def _wait(follower: Follower, started: Started) -> ToolCallResult | str | Form:
    """The call's result (or why there is none), following it meanwhile; or the form the
    follower must hand back to the client first."""
    outcome: ToolCallResult | str | None = None
    async with anyio.create_task_group() as waiting:

        async def result() -> None:
            nonlocal outcome
            try:
                outcome = await started.handle.result()
            except WorkflowFailureError as exc:
                outcome = (
                    f"{started.handle.id}: the call ended without a result: {exc.cause or exc}"
                )
            except RPCError as exc:  # the call goes on; its id (or key) finds it again
                outcome = f"{started.handle.id}: lost track of the call: {exc.message}"
            waiting.cancel_scope.cancel()

        async def follow() -> None:
            await follower.run()
            if follower.needed is not None:
                waiting.cancel_scope.cancel()

        waiting.start_soon(result)
        waiting.start_soon(follow)
    if outcome is None:
        assert follower.needed is not None
        return follower.needed
    return outcome


def client_name(ctx: Any) -> str:
    """The name the client gave in ``clientInfo`` (``initialize``, or the request's envelope on
    2026-07-28), or ``""`` when it gave none."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    if not isinstance(name, str):
        return ""
    return " ".join(name.split())[:MAX_CLIENT_NAME_CHARS]


def peer_cancelled(ctx: Any) -> bool:
    """Whether the client cancelled this request (``notifications/cancelled``).

    The SDK sets the request's ``cancel_requested`` event before it cancels the handler for a
    cancellation; a closed connection or a stopping server cancels the handler without it. The
    event sits on the session's request channel, which the SDK does not expose publicly (the
    ``mcp`` range in pyproject is pinned for this, and the cancellation test fails if it moves).
    """
    channel = getattr(ctx.session, "_request_outbound", None)
    event = getattr(channel, "cancel_requested", None)
    return bool(event is not None and event.is_set())
