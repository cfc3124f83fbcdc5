"""The ``toolcalls`` command line: parsing and dispatch, the worker and the dev server.

Exit codes: 0 success, 1 the call or action did not succeed, 2 usage, configuration or connection
errors (with a one-line reason on stderr). Every path leaves through ``os._exit`` after flushing,
because a process that used a Temporal client can abort at interpreter exit
(temporalio/sdk-python issue 300). The call commands live in ``toolcalls.worker.commands``,
``replay`` in ``toolcalls.worker.replay``.
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
from typing import TYPE_CHECKING

from toolcalls.activities.definitions import DEFINITION_FORMATS
from toolcalls.worker import arguments, commands, replay
from toolcalls.worker.arguments import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from toolcalls.worker.config import Config, ConfigError, load_config
from toolcalls.worker.connect import Target, connect, resolve_target
from toolcalls.worker.devserver import DevServer, DevServerError
from toolcalls.worker.inbox import serve as inbox
from toolcalls.worker.mcp import MCP_EXTRA
from toolcalls.worker.payloads import server as codec_server
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.run import StartupError, serve, stop_on_signals
from toolcalls.worker.telemetry import tracing
from toolcalls.worker.telemetry.endpoint import Health, MetricsEndpoint, metrics_runtime
from toolcalls.worker.telemetry.logs import configure_logging
from toolcalls.worker.telemetry.runtime import worker_runtime
from toolcalls.worker.telemetry.settings import LogFormat, split_address
from toolcalls.workflows.models.approval import GrantScope
from toolcalls.workflows.reach.client import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ToolCallClient

if TYPE_CHECKING:
    from temporalio.runtime import Runtime

DECISION_COMMANDS = ("approve", "deny", "answer")
SERVING_COMMANDS = ("worker", "dev", "codec-server", "mcp", "inbox")
UNTRACED_COMMANDS = ("dev", "codec-server", "tools", "prune-payloads")

log = logging.getLogger("toolcalls")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        _leave(EXIT_USAGE, f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toolcalls", description="Durable, policy-checked agent tool calls.")
    commands_ = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands_.add_parser("worker", help="run a worker")
    run.add_argument("--config", help="TOML configuration (default $TOOLCALLS_CONFIG)")
    run.add_argument("--dev", action="store_true", help="start the embedded dev server first")
    run.add_argument("--address", help="Temporal address host:port")
    run.add_argument("--namespace", help="Temporal namespace")
    run.add_argument("--task-queue", help="the deployment's task queue")
    run.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        type=_address,
        help="serve /metrics, /healthz and /readyz here (default [telemetry] prometheus)",
    )
    run.add_argument(
        "--log-format",
        choices=[choice.value for choice in LogFormat],
        help="text or json lines on stderr (default log_format)",
    )
    run.add_argument(
        "--inbox",
        action="store_true",
        help="also serve the approval inbox ([inbox]; with --dev, a dev login if it has no users)",
    )

    dev = commands_.add_parser("dev", help="run only the embedded Temporal dev server")
    dev.add_argument("--config", help="TOML configuration (its [dev] section)")
    dev.add_argument("--db", help="SQLite file for the server's state")
    dev.add_argument("--port", type=int, help="frontend gRPC port")
    dev.add_argument("--ui-port", type=int, help="web UI port")
    dev.add_argument("--headless", action="store_true", help="no web UI")

    codec = commands_.add_parser(
        "codec-server", help="serve Temporal's remote codec protocol for its UI and CLI"
    )
    codec.add_argument("--config", help="TOML configuration: [codec] and [codec.server]")
    codec.add_argument("--listen", metavar="HOST:PORT", help="default [codec.server] listen")

    prune = commands_.add_parser(
        "prune-payloads", help="delete stored payloads of the local store past their retention"
    )
    prune.add_argument("--config", help="TOML configuration: its [payloads] local store")
    prune.add_argument(
        "--older-than-days",
        metavar="DAYS",
        type=float,
        required=True,
        help="delete what was last stored more than DAYS ago",
    )

    _call_parsers(commands_)
    return parser


def _mcp_parser(commands_: argparse._SubParsersAction[_Parser], connection: _Parser) -> None:
    mcp = commands_.add_parser(
        "mcp",
        parents=[connection],
        help="serve the enabled tools to MCP clients (stdio, or streamable HTTP)",
    )
    mcp.add_argument(
        "--http",
        metavar="HOST:PORT",
        nargs="?",
        const="",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(default [mcp] listen, 127.0.0.1:8765); needs the token in [mcp] token_env",
    )
    mcp.add_argument(
        "--profile", metavar="NAME", help="offer only this profile's tools (default [mcp] profile)"
    )


def _inbox_parser(commands_: argparse._SubParsersAction[_Parser], connection: _Parser) -> None:
    served = commands_.add_parser(
        "inbox", parents=[connection], help="serve the approval inbox (a web page)"
    )
    served.add_argument("--listen", metavar="HOST:PORT", help="default [inbox] listen")
    tools = served.add_subparsers(dest="inbox_command", parser_class=_Parser)
    tools.add_parser(
        "hash-password", help="print an argon2 hash of a password read from standard input"
    )


def _call_parsers(commands_: argparse._SubParsersAction[_Parser]) -> None:
    output = _Parser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of text")
    connection = _Parser(add_help=False)
    connection.add_argument("--config", help="TOML configuration (default $TOOLCALLS_CONFIG)")
    connection.add_argument("--address", help="Temporal address host:port")
    connection.add_argument("--namespace", help="Temporal namespace")
    connection.add_argument("--task-queue", help="the deployment's task queue")
    both = [connection, output]
    _mcp_parser(commands_, connection)
    _inbox_parser(commands_, connection)

    call = commands_.add_parser("call", parents=both, help="run one tool call")
    call.add_argument("tool", metavar="TOOL")
    call.add_argument(
        "arguments",
        metavar="ARGS_JSON",
        nargs="?",
        default="{}",
        help="a JSON object, or @FILE to read it from a file",
    )
    call.add_argument("--policy", metavar="JSON|FILE", help="a CapabilityPolicy, inline or a file")
    call.add_argument(
        "--require-approval",
        action="store_true",
        help="require a human approval for every capability of the tool",
    )
    call.add_argument(
        "--approval-timeout",
        metavar="SECONDS",
        type=arguments.approval_timeout,
        default=argparse.SUPPRESS,
        help="how long to wait for a decision, or none (default 24 hours)",
    )
    call.add_argument("--id", metavar="WORKFLOW_ID", help="the workflow id")
    call.add_argument(
        "--no-wait",
        action="store_true",
        help="print the workflow id once the call is planned, instead of the result",
    )

    pending = commands_.add_parser(
        "pending", parents=both, help="list calls waiting for an approval or an answer"
    )
    pending.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_PAGE_SIZE,
        help=f"list at most this many (a page; 1-{MAX_PAGE_SIZE})",
    )
    pending.add_argument(
        "--page-token", metavar="TOKEN", help="the next page, as the previous one printed it"
    )
    show = commands_.add_parser("show", parents=both, help="show one call")
    show.add_argument("workflow_id", metavar="WORKFLOW_ID")

    for verb in ("approve", "deny"):
        decide = commands_.add_parser(verb, parents=both, help=f"{verb} a call's pending request")
        decide.add_argument("workflow_id", metavar="WORKFLOW_ID")
        decide.add_argument("--by", metavar="NAME", help="who decides (default: your user name)")
        decide.add_argument("--reason", metavar="TEXT", help="why")
    approve = commands_.choices["approve"]
    approve.add_argument(
        "--edit",
        metavar="ARGS_JSON",
        help="approve the call with these arguments instead (a JSON object, or @FILE)",
    )
    approve.add_argument(
        "--remember",
        metavar="DURATION",
        type=arguments.duration,
        help="also approve later calls of the tool for this long (90s, 30m, 8h, 7d)",
    )
    approve.add_argument(
        "--scope",
        choices=[scope.value for scope in GrantScope],
        help="with --remember: the calls of the same parent workflow (default) or all",
    )
    approve.add_argument(
        "--any-arguments",
        action="store_true",
        help="with --remember: also calls with other arguments (same capabilities)",
    )
    grants = commands_.add_parser("grants", help="list or revoke standing grants")
    grant_commands = grants.add_subparsers(dest="grants_command", required=True)
    grant_commands.add_parser("list", parents=both, help="list the grants in force").add_argument(
        "--tool", metavar="TOOL", help="only this tool's"
    )
    revoke = grant_commands.add_parser("revoke", parents=both, help="end a grant now")
    revoke.add_argument("grant_id", metavar="GRANT_ID")
    revoke.add_argument("--by", metavar="NAME", help="who revokes (default: your user name)")
    revoke.add_argument("--reason", metavar="TEXT", help="why")
    answer = commands_.add_parser("answer", parents=both, help="answer an ask_user call")
    answer.add_argument("workflow_id", metavar="WORKFLOW_ID")
    answer.add_argument("text", metavar="TEXT", nargs="?", help="the answer")
    answer.add_argument("--decline", action="store_true", help="decline to answer")
    answer.add_argument("--by", metavar="NAME", help="who answers (default: your user name)")

    tools = commands_.add_parser(
        "tools", parents=[output], help="list the enabled tools (no server needed)"
    )
    tools.add_argument("--config", help="TOML configuration (default $TOOLCALLS_CONFIG)")
    tools.add_argument(
        "--format",
        choices=DEFINITION_FORMATS,
        help="print the definitions as JSON in this provider's shape (--json: anthropic)",
    )
    tools.add_argument("--profile", metavar="NAME", help="only the tools of this profile")
    replay_ = commands_.add_parser(
        "replay", parents=[output], help="replay exported histories against this version"
    )
    replay_.add_argument("histories", metavar="HISTORY.json", nargs="+")
    replay_.add_argument(
        "--workflow",
        metavar="MODULE:CLASS",
        action="append",
        help="also replay histories of this workflow class of yours (imported from the working "
        "directory); repeat for several",
    )
    replay_.add_argument(
        "--config",
        help="TOML configuration (default $TOOLCALLS_CONFIG): its [codec] keys, [payloads] store",
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``toolcalls`` console script."""
    args = _parser().parse_args(argv)
    if args.command in DECISION_COMMANDS or getattr(args, "grants_command", None) == "revoke":
        problem = arguments.check_decision_args(args)
        if problem:
            _leave(EXIT_USAGE, f"toolcalls {args.command}: error: {problem}")
    try:
        if getattr(args, "inbox_command", None) == "hash-password":
            _leave(inbox.hash_password_command(sys.stdin))
        config = load_config(args.config)
        if args.command == "replay":
            code = asyncio.run(replay.run(args, config))
        else:
            serving = args.command in SERVING_COMMANDS
            log_format = getattr(args, "log_format", None) or config.log_format
            configure_logging(
                config.log_level.upper() if serving else logging.WARNING, LogFormat(log_format)
            )
            if args.command not in UNTRACED_COMMANDS:
                tracing.install_tracer_provider(os.environ)
            if args.command == "worker":
                code = asyncio.run(_worker(config, args))
            elif args.command == "dev":
                code = asyncio.run(_dev(config, args))
            elif args.command == "codec-server":
                code = asyncio.run(codec_server.run(config, args, os.environ))
            elif args.command == "mcp":
                code = asyncio.run(_mcp(config, args))
            elif args.command == "inbox":
                code = asyncio.run(inbox.run(config, args, os.environ))
            elif args.command == "tools":
                code = commands.list_tools(config, args)
            elif args.command == "prune-payloads":
                code = commands.prune_payloads(config, args)
            else:
                code = asyncio.run(commands.run(config, args))
    except (ConfigError, DevServerError, StartupError, tracing.TracingUnavailable) as exc:
        _leave(EXIT_USAGE, f"toolcalls: {exc}")
    except CommandError as exc:
        _leave(exc.code, f"toolcalls: {exc}")
    except KeyboardInterrupt:
        if args.command not in SERVING_COMMANDS:
            _leave(EXIT_FAILED, f"toolcalls: {args.command}: interrupted")
        code = EXIT_OK
    _leave(code)


def _leave(code: int, message: str | None = None) -> None:
    if message:
        print(message, file=sys.stderr)
    # Spans still buffered go out before the process ends without running its exit handlers.
    tracing.shutdown()
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


async def _worker(config: Config, args: argparse.Namespace) -> int:
    if args.task_queue:
        config = config.model_copy(update={"task_queue": args.task_queue})
    # The inbox's configuration is checked before anything starts.
    served_inbox = inbox.plan(config, os.environ, dev=args.dev) if args.inbox else None
    # The inbox's configuration is checked before anything starts.
    served_inbox = inbox.plan(config, os.environ, dev=args.dev) if args.inbox else None
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


async def _mcp(config: Config, args: argparse.Namespace) -> int:
    missing = MCP_EXTRA.missing()
    if missing:
        raise ConfigError(
            f"mcp: toolcalls mcp needs the mcp extra (missing {', '.join(missing)}): "
            f"{MCP_EXTRA.hint}"
        )
    from toolcalls.worker.mcp import server

    return await server.run(config, args, os.environ)


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


def _address(value: str) -> str:
    try:
        split_address(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value
