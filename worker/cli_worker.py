"""The serving commands of ``toolcalls``: ``worker`` (with ``--dev``, ``--inbox``, ``--metrics``),
``dev`` and ``mcp``.

Each returns its exit code; what stops it from starting is a ``ConfigError``, ``StartupError`` or
``DevServerError`` with a one-line reason (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from toolcalls.worker.config import Config, ConfigError, policy_sets
from toolcalls.worker.connect import Target, connect, resolve_target
from toolcalls.worker.devserver import DevServer
from toolcalls.worker.exits import EXIT_OK, StartupError
from toolcalls.worker.inbox import serve as inbox
from toolcalls.worker.mcp import MCP_EXTRA
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.run import serve, stop_on_signals
from toolcalls.worker.telemetry.endpoint import Health, MetricsEndpoint, metrics_runtime
from toolcalls.worker.telemetry.runtime import worker_runtime
from toolcalls.worker.telemetry.settings import split_address
from toolcalls.workflows.reach.client import ToolCallClient

if TYPE_CHECKING:
    from temporalio.runtime import Runtime

log = logging.getLogger("toolcalls")


def _dev_server(
    config: Config,
    db: str | None = None,
    *,
    port: int | None = None,
    ui_port: int | None = None,
    headless: bool = False,
) -> DevServer:
    dev = config.dev
    return DevServer(
        Path(db) if db else dev.data_dir / "temporal.db",
        ip=dev.ip,
        port=port or dev.port,
        ui_port=None if headless or (dev.headless and not ui_port) else (ui_port or dev.ui_port),
        namespace=dev.namespace,
        ui_codec_endpoint=config.codec.server_url,
    )


@contextlib.asynccontextmanager
async def _maybe_dev_server(config: Config, enabled: bool) -> AsyncIterator[DevServer | None]:
    if not enabled:
        yield None
        return
    server = _dev_server(config)
    async with server:
        ui = f", UI http://{server.ip}:{server.ui_port}" if server.ui_port else ""
        log.info("dev server at %s (state in %s%s)", server.address, server.db_file, ui)
        yield server


async def worker(config: Config, args: argparse.Namespace) -> int:
    if args.task_queue:
        config = config.model_copy(update={"task_queue": args.task_queue})
    # The inbox's configuration and the policy files are checked before anything starts (the
    # worker loads the policies again when it is built).
    served_inbox = inbox.plan(config, os.environ, dev=args.dev) if args.inbox else None
    if config.serves_workflows:
        policy_sets(config)
    stop = asyncio.Event()
    stop_on_signals(stop)
    health = Health()
    async with contextlib.AsyncExitStack() as telemetry:
        runtime = await _metrics(config, args, health, telemetry)
        await _run_worker(config, args, stop, health, runtime, served_inbox)
    return EXIT_OK


async def _metrics(
    config: Config, args: argparse.Namespace, health: Health, stack: contextlib.AsyncExitStack
) -> Runtime | None:
    """The worker's runtime; with metrics, once their listener listens (before connecting, so
    that probes see a live process that is not ready yet)."""
    listen = args.metrics or config.telemetry.prometheus
    if listen is None:
        return worker_runtime(config.telemetry)
    host, port = split_address(listen)
    try:
        runtime, metrics_port = metrics_runtime(config.telemetry)
        await stack.enter_async_context(MetricsEndpoint(host, port, metrics_port, health))
    except OSError as exc:
        raise StartupError(f"cannot serve metrics on {listen}: {exc.strerror or exc}") from None
    log.info("metrics and health at http://%s (/metrics, /healthz, /readyz)", listen)
    return runtime


async def _run_worker(
    config: Config,
    args: argparse.Namespace,
    stop: asyncio.Event,
    health: Health,
    runtime: Runtime | None,
    served_inbox: inbox.Plan | None,
) -> None:
    async with _maybe_dev_server(config, args.dev) as server:
        if server is not None:
            # The embedded server is plain local gRPC: a profile's API key or TLS is for another.
            target = Target(server.address, server.namespace, {})
        else:
            target = resolve_target(config.temporal, address=args.address, namespace=args.namespace)
        converter = data_converter(config)
        try:
            client = await connect(target, converter, runtime=runtime)
        except (RuntimeError, ValueError) as exc:
            raise StartupError(
                f"cannot connect to {target.address} namespace {target.namespace}: {exc}"
            ) from None
        if served_inbox is None:
            await serve(client, config, stop, health=health)
            return
        calls = ToolCallClient(client, task_queue=config.task_queue)
        beside = asyncio.ensure_future(
            inbox.serve(served_inbox, calls, stop, announce=lambda text: print(text, flush=True))
        )
        # An inbox that cannot serve (its port is taken, say) stops the worker with its reason.
        beside.add_done_callback(lambda _: stop.set())
        try:
            await serve(client, config, stop, health=health)
        finally:
            stop.set()
            await beside


async def mcp(config: Config, args: argparse.Namespace) -> int:
    missing = MCP_EXTRA.missing()
    if missing:
        raise ConfigError(
            f"mcp: toolcalls mcp needs the mcp extra (missing {', '.join(missing)}): "
            f"{MCP_EXTRA.hint}"
        )
    from toolcalls.worker.mcp import server

    return await server.run(config, args, os.environ)


async def dev(config: Config, args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    stop_on_signals(stop)
    server = _dev_server(
        config, args.db, port=args.port, ui_port=args.ui_port, headless=args.headless
    )
    async with server:
        ui = f"; UI http://{server.ip}:{server.ui_port}" if server.ui_port else ""
        print(
            f"Temporal dev server at {server.address} (state in {server.db_file}){ui}", flush=True
        )
        await stop.wait()
    return EXIT_OK
