"""The ``toolcalls`` command line.

Exit codes: 0 success, 1 the call or action did not succeed, 2 usage, configuration or connection
errors (with a one-line reason on stderr). Every path leaves through ``os._exit`` after flushing,
because a process that used a Temporal client can abort at interpreter exit
(temporalio/sdk-python issue 300).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from worker.config import Config, ConfigError, load_config
from worker.connect import Target, connect, resolve_target
from worker.devserver import DevServer, DevServerError
from worker.run import StartupError, serve, stop_on_signals

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

log = logging.getLogger("toolcalls")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        _leave(EXIT_USAGE, f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toolcalls", description="Durable, policy-checked agent tool calls.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("worker", help="run a worker")
    run.add_argument("--config", help="TOML configuration (default $TOOLCALLS_CONFIG)")
    run.add_argument("--dev", action="store_true", help="start the embedded dev server first")
    run.add_argument("--address", help="Temporal address host:port")
    run.add_argument("--namespace", help="Temporal namespace")
    run.add_argument("--task-queue", help="the deployment's task queue")

    dev = commands.add_parser("dev", help="run only the embedded Temporal dev server")
    dev.add_argument("--config", help="TOML configuration (its [dev] section)")
    dev.add_argument("--db", help="SQLite file for the server's state")
    dev.add_argument("--port", type=int, help="frontend gRPC port")
    dev.add_argument("--ui-port", type=int, help="web UI port")
    dev.add_argument("--headless", action="store_true", help="no web UI")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``toolcalls`` console script."""
    args = _parser().parse_args(argv)
    try:
        config = load_config(args.config)
        logging.basicConfig(
            level=config.log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        if args.command == "worker":
            code = asyncio.run(_worker(config, args))
        else:
            code = asyncio.run(_dev(config, args))
    except (ConfigError, DevServerError, StartupError) as exc:
        _leave(EXIT_USAGE, f"toolcalls: {exc}")
    except KeyboardInterrupt:
        code = EXIT_OK
    _leave(code)


def _leave(code: int, message: str | None = None) -> None:
    if message:
        print(message, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


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


async def _worker(config: Config, args: argparse.Namespace) -> int:
    if args.task_queue:
        config = config.model_copy(update={"task_queue": args.task_queue})
    stop = asyncio.Event()
    stop_on_signals(stop)
    async with _maybe_dev_server(config, args.dev) as server:
        if server is not None:
            # The embedded server is plain local gRPC: a profile's API key or TLS is for another.
            target = Target(server.address, server.namespace, {})
        else:
            target = resolve_target(config.temporal, address=args.address, namespace=args.namespace)
        try:
            client = await connect(target)
        except (RuntimeError, ValueError) as exc:
            raise StartupError(
                f"cannot connect to {target.address} namespace {target.namespace}: {exc}"
            ) from None
        await serve(client, config, stop)
    return EXIT_OK


async def _dev(config: Config, args: argparse.Namespace) -> int:
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
