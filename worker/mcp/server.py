"""``toolcalls mcp``: the deployment's tools as an MCP server, over stdio or streamable HTTP.

Built on the official SDK's low-level ``Server``: ``tools/list`` answers from the catalog
(``toolcalls.worker.mcp.tools``), ``tools/call`` runs a ``ToolCallWorkflow``
(``toolcalls.worker.mcp.calls``). It connects to Temporal like the other commands and needs a
toolcalls worker serving the deployment; it says so at start when none is, and a call fails with
``tool_unavailable`` while none is.

Over HTTP (``--http HOST:PORT``, ``[mcp] listen``, loopback by default) the MCP endpoint is
``/mcp`` and every request must carry the bearer token of ``[mcp] token_env`` or, with
``[mcp.oauth]``, an OAuth access token (``toolcalls.worker.mcp.auth``, ``oauth``); on a loopback
address the SDK also refuses requests whose ``Host`` or ``Origin`` is not local (DNS rebinding).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import logging
import socket
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateSecurity
from mcp.server.stdio import stdio_server

from toolcalls.activities.catalog import Catalog
from toolcalls.worker.arguments import EXIT_OK, default_approver
from toolcalls.worker.commands import connect_tools
from toolcalls.worker.config import Config, ConfigError, build_catalog
from toolcalls.worker.listen import bind
from toolcalls.worker.mcp.auth import BearerToken, Gate, token_from
from toolcalls.worker.mcp.calls import call_tool
from toolcalls.worker.mcp.front import IDEMPOTENCY_KEY, Front
from toolcalls.worker.mcp.requester import request_front
from toolcalls.worker.mcp.rounds import STATE_TTL_SECONDS, state_boundary
from toolcalls.worker.mcp.sealing import TaskIds, state_security
from toolcalls.worker.mcp.tasks import Tasks
from toolcalls.worker.mcp.tools import TOOLS_TTL_MS
from toolcalls.worker.payloads.server import split_listen
from toolcalls.worker.run import stop_on_signals
from toolcalls.workflows.reach.client import ToolCallClient

MCP_PATH = "/mcp"
SERVER_NAME = "toolcalls"
INSTRUCTIONS = (
    "Each tool call runs as a durable workflow under the deployment's policy: a call that needs "
    "a human approval waits for it (progress says who may decide and where), and a write runs "
    "at most once. Send _meta['" + IDEMPOTENCY_KEY + "'] with a call to get the same call (and "
    "its result) when you retry it, even after reconnecting."
)

log = logging.getLogger("toolcalls.mcp")


def build_server(front: Front, security: RequestStateSecurity | None = None) -> Server:
    """The MCP server of ``front``: its tools, how they are called, and their tasks (sealed
    under ``security``, the key of ``requestState`` too; one of the process's own without it)."""
    if security is None:
        security = RequestStateSecurity.ephemeral(ttl=STATE_TTL_SECONDS, audience=SERVER_NAME)
    tasks = Tasks(front, TaskIds(security.codec))

    async def list_tools(
        ctx: object, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = request_front(front, ctx).tools  # an OAuth request: its profile's
        return types.ListToolsResult(tools=tools, ttl_ms=TOOLS_TTL_MS, cache_scope="private")

    async def call(
        ctx: object, params: types.CallToolRequestParams
    ) -> Any:  # a CallToolResult, an InputRequiredResult, or a task (see docs/mcp.md)
        # A task (a mapping whose resultType is "task") is outside the SDK's annotation, but its
        # runner sends a 2026-07-28 result of an extension's resultType as it is.
        return await call_tool(front, ctx, params, tasks)

    server = Server(
        SERVER_NAME,
        version=importlib.metadata.version("toolcalls"),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )
    server.middleware.append(state_boundary(SERVER_NAME, security))
    tasks.register(server)
    return server


def identity(config: Config, http: bool, static: bool = True) -> str:
    """Who the MCP user is: ``[mcp] user``, or over stdio the local user. (A request with an
    OAuth access token is its principal instead: ``toolcalls.worker.mcp.requester``.)

    Raises:
        ConfigError: approvals through the client over HTTP with the ``static`` token and no
            name bound to it.
    """
    section = config.mcp
    if section.user is not None:
        return section.user
    if http:
        if section.approve_via_elicitation and static:
            raise ConfigError(
                "mcp.user: approve_via_elicitation over HTTP needs the name of the token's user"
            )
        return ""
    return default_approver()


async def run(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``toolcalls mcp``: serve until the client leaves (stdio) or SIGINT/SIGTERM."""
    http = args.http is not None
    address = _address(args.http or config.mcp.listen) if http else None
    oauth = config.mcp.oauth
    token = token_from(environ, config.mcp.token_env, oauth is not None) if http else None
    who = identity(config, http, static=token is not None)
    catalog = build_catalog(config)
    profile = getattr(args, "profile", None) or config.mcp.profile
    if profile is not None and profile not in catalog.settings.profiles:
        known = ", ".join(catalog.settings.profiles) or "none"
        raise ConfigError(f"mcp: no profile {profile!r}; profiles: {known}")
    # A busy port stops the command before it connects to anything (or says anything else).
    sock = bind(*address, "mcp") if address is not None else None
    try:
        security = state_security(
            environ, config.mcp.state_key_env, ttl=STATE_TTL_SECONDS, audience=SERVER_NAME
        )
        await _serve(config, args, catalog, who, profile, (address, sock), token, security)
    finally:
        if sock is not None:
            sock.close()
    return EXIT_OK


async def _serve(
    config: Config,
    args: argparse.Namespace,
    catalog: Catalog,
    who: str,
    profile: str | None,
    listener: tuple[tuple[str, int] | None, socket.socket | None],
    token: str | None,
    security: RequestStateSecurity,
) -> None:
    address, sock = listener
    http = sock is not None
    calls = await connect_tools(config, args)
    await _check_worker(calls)
    front = Front.build(
        calls,
        catalog,
        identity=who,
        link=config.notifications.link,
        approve_via_elicitation=config.mcp.approve_via_elicitation,
        stdio=not http,
        profile=profile,
        inbox_url=inbox_url_of(config, args),
    )
    server = build_server(front, security)
    if address is not None and sock is not None:
        gate = Gate(token, config.mcp.oauth, profile, MCP_PATH)
        await _serve_http(server, address, sock, gate, catalog)
    else:
        await _serve_stdio(server)


def inbox_url_of(config: Config, args: argparse.Namespace) -> str | None:
    """The inbox's public URL: ``--inbox-url`` (checked by the parser), else ``[mcp] inbox_url``."""
    given: str | None = getattr(args, "inbox_url", None)
    return given or config.mcp.inbox_url


def _address(listen: str) -> tuple[str, int]:
    try:
        return split_listen(listen)
    except ConfigError:
        raise ConfigError(f"mcp: {listen!r} is not HOST:PORT (--http, [mcp] listen)") from None


async def _check_worker(calls: ToolCallClient) -> None:
    if not await calls.worker_serving(calls.task_queue):
        target = calls.client.service_client.config.target_host
        log.warning(
            "no toolcalls worker is serving task queue %r at %s namespace %s: calls fail with "
            "tool_unavailable until one runs (toolcalls worker --config FILE)",
            calls.task_queue,
            target,
            calls.client.namespace,
        )


async def _serve_stdio(server: Server) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    async with anyio.create_task_group() as serving:

        async def until_stopped() -> None:
            await stop.wait()
            serving.cancel_scope.cancel()

        serving.start_soon(until_stopped)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        serving.cancel_scope.cancel()


async def _serve_http(
    server: Server, address: tuple[str, int], sock: socket.socket, gate: Gate, catalog: Catalog
) -> None:
    host, port = address
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    async with gate.protect(
        server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    ) as app:
        await _listen(app, address, sock, listen, catalog)


async def _listen(
    app: BearerToken, address: tuple[str, int], sock: socket.socket, listen: str, catalog: Catalog
) -> None:
    host, port = address
    http = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    )
    serving = asyncio.ensure_future(http.serve(sockets=[sock]))
    while not http.started and not serving.done():
        await asyncio.sleep(0.05)
    if http.started:
        print(f"MCP server at http://{listen}{MCP_PATH} ({len(catalog.names)} tools)", flush=True)
    await serving
    if not http.started:
        raise ConfigError(f"mcp: cannot listen on {listen}")
