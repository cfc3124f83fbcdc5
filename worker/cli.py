"""The ``toolcalls`` command line: its entry point and the dispatch to each command.

Exit codes: 0 success, 1 the call or action did not succeed, 2 usage, configuration or connection
errors (with a one-line reason on stderr). Every path leaves through ``exits.leave``. The
arguments are in ``cli_parser`` (texts in ``cli_help``), the serving commands in ``cli_worker``,
the call commands in ``commands``, ``replay`` in ``replay``. Each command's module is imported
when it runs: a short command does not load the worker, the inbox or the MCP server.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from toolcalls.worker import arguments
from toolcalls.worker.cli_parser import parse
from toolcalls.worker.config import ConfigError, load_config
from toolcalls.worker.devserver import DevServerError
from toolcalls.worker.exits import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    StartupError,
    leave,
    silence,
)
from toolcalls.worker.telemetry import tracing
from toolcalls.worker.telemetry.logs import configure_logging
from toolcalls.worker.telemetry.settings import LogFormat

DECISION_COMMANDS = ("approve", "deny", "respond", "answer")
SERVING_COMMANDS = ("worker", "dev", "codec-server", "mcp", "inbox")
UNTRACED_COMMANDS = ("dev", "codec-server", "tools", "prune-payloads", "policy", "connections")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``toolcalls`` console script."""
    args = parse(argv)
    if args.command in DECISION_COMMANDS or getattr(args, "grants_command", None) == "revoke":
        problem = arguments.check_decision_args(args)
        if problem:
            leave(EXIT_USAGE, f"toolcalls {args.command}: error: {problem}")
    try:
        code = _dispatch(args)
    except (ConfigError, DevServerError, StartupError, tracing.TracingUnavailable) as exc:
        leave(EXIT_USAGE, f"toolcalls: {exc}")
    except CommandError as exc:
        leave(exc.code, f"toolcalls: {exc}")
    except BrokenPipeError:
        _reader_gone()
    except KeyboardInterrupt:
        if args.command not in SERVING_COMMANDS:
            leave(EXIT_FAILED, f"toolcalls: {args.command}: interrupted")
        code = EXIT_OK
    leave(code)


def _reader_gone() -> NoReturn:
    """The reader of the output went away (`toolcalls ... | head -3`): end quietly, exit 1."""
    silence(sys.stdout)
    leave(EXIT_FAILED)


def _dispatch(args: argparse.Namespace) -> int:
    if getattr(args, "inbox_command", None) == "hash-password":
        from toolcalls.worker.inbox import serve as inbox

        return inbox.hash_password_command(sys.stdin)
    config = load_config(args.config)
    if args.command == "replay":
        from toolcalls.worker import replay

        return asyncio.run(replay.run(args, config))
    serving = args.command in SERVING_COMMANDS
    log_format = getattr(args, "log_format", None) or config.log_format
    configure_logging(
        config.log_level.upper() if serving else logging.WARNING, LogFormat(log_format)
    )
    if args.command not in UNTRACED_COMMANDS:
        tracing.install_tracer_provider(os.environ)
    if args.command in ("worker", "dev", "mcp"):
        from toolcalls.worker import cli_worker

        serve = {"worker": cli_worker.worker, "dev": cli_worker.dev, "mcp": cli_worker.mcp}
        return asyncio.run(serve[args.command](config, args))
    if args.command == "codec-server":
        from toolcalls.worker.payloads import server as codec_server

        return asyncio.run(codec_server.run(config, args, os.environ))
    if args.command == "inbox":
        from toolcalls.worker.inbox import serve as inbox

        return asyncio.run(inbox.run(config, args, os.environ))
    if args.command == "policy":
        from toolcalls.worker import policy_cases

        return policy_cases.run_cases(config, Path(args.cases))
    if args.command == "connections":
        from toolcalls.worker.connections import cli as connections_cli

        return connections_cli.run(config, args, os.environ)
    from toolcalls.worker import commands

    if args.command == "tools":
        return commands.list_tools(config, args)
    if args.command == "prune-payloads":
        return commands.prune_payloads(config, args)
    return asyncio.run(commands.run(config, args))
