"""The ``toolcalls`` command line's arguments (argparse); the texts are in ``cli_help``.

A malformed command line is exit 2 with the usage and a one-line reason on stderr, naming what a
person typed or can type (``--tool``, ``TOOL``, the commands that exist), never a variable of ours.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn, TypeAlias

from toolcalls.activities.definitions import DEFINITION_FORMATS
from toolcalls.worker import arguments, cli_help
from toolcalls.worker.cli_help import CONFIG, TOOL, WORKFLOW_ID
from toolcalls.worker.exits import EXIT_USAGE, leave
from toolcalls.worker.mcp.settings import inbox_origin
from toolcalls.worker.telemetry.settings import LogFormat, split_address
from toolcalls.workflows.models.approval import GrantScope
from toolcalls.workflows.reach.client import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        leave(EXIT_USAGE, f"{self.prog}: {message}")


Commands: TypeAlias = "argparse._SubParsersAction[_Parser]"


def _command(commands_: Commands, name: str, *, parents: Sequence[_Parser] = ()) -> _Parser:
    """A subcommand with its line of help and its example."""
    text = cli_help.COMMANDS[name]
    parser: _Parser = commands_.add_parser(
        name,
        parents=list(parents),
        help=text.line,
        description=text.line,
        epilog=text.epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line as a namespace; a malformed one leaves with exit 2."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error(f"choose a command: {', '.join(cli_help.COMMANDS)}")
    if args.command == "policy" and args.policy_command is None:
        parser.error("policy: name a command: test")
    if args.command == "connections" and args.connections_command is None:
        connections: _Parser = _subcommands(parser).choices["connections"]
        connections.error(f"choose a command: {', '.join(cli_help.CONNECTION_COMMANDS)}")
    if args.command == "grants" and args.grants_command is None:
        grants: _Parser = _subcommands(parser).choices["grants"]
        grants.error(f"choose a command: {', '.join(cli_help.GRANT_COMMANDS)}")
    return args


def _subcommands(parser: argparse.ArgumentParser) -> Commands:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _parser() -> argparse.ArgumentParser:
    from toolcalls import __version__

    parser = _Parser(
        prog="toolcalls",
        description=cli_help.TOOLCALLS,
        epilog=cli_help.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"toolcalls {__version__}")
    commands_ = parser.add_subparsers(
        dest="command", metavar="COMMAND", title="commands", parser_class=_Parser
    )

    run = _command(commands_, "worker")
    run.add_argument("--config", metavar="FILE", help=CONFIG)
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

    dev = _command(commands_, "dev")
    dev.add_argument("--config", metavar="FILE", help=f"{CONFIG}: its [dev] section")
    dev.add_argument("--db", help="SQLite file for the server's state")
    dev.add_argument("--port", type=int, help="frontend gRPC port")
    dev.add_argument("--ui-port", type=int, help="web UI port")
    dev.add_argument("--headless", action="store_true", help="no web UI")

    codec = _command(commands_, "codec-server")
    codec.add_argument("--config", metavar="FILE", help=f"{CONFIG}: [codec] and [codec.server]")
    codec.add_argument("--listen", metavar="HOST:PORT", help="default [codec.server] listen")

    prune = _command(commands_, "prune-payloads")
    prune.add_argument("--config", metavar="FILE", help=f"{CONFIG}: its [payloads] local store")
    prune.add_argument(
        "--older-than-days",
        metavar="DAYS",
        type=float,
        required=True,
        help="delete what was last stored more than DAYS ago",
    )

    _call_parsers(commands_)
    return parser


def _mcp_parser(commands_: Commands, connection: _Parser) -> None:
    mcp = _command(commands_, "mcp", parents=[connection])
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
    mcp.add_argument(
        "--inbox-url",
        metavar="URL",
        type=_inbox_url,
        help="the approval inbox's public URL: approvals are handed over as links to it "
        "(default [mcp] inbox_url)",
    )


def _inbox_parser(commands_: Commands, connection: _Parser) -> None:
    served = _command(commands_, "inbox", parents=[connection])
    served.add_argument("--listen", metavar="HOST:PORT", help="default [inbox] listen")
    # hash-password is optional: the usage shows it as a second form, not as a required word.
    tools = served.add_subparsers(
        dest="inbox_command", parser_class=_Parser, help=argparse.SUPPRESS
    )
    tools.add_parser(
        "hash-password",
        help="print an argon2 hash of a password read from standard input",
        description="print an argon2 hash of a password read from standard input "
        "(on a terminal it asks twice, without echo), for [[inbox.users]] password_hash",
    )
    usage = served.format_usage().removeprefix("usage: ").strip()
    served.usage = f"{usage}\n       toolcalls inbox hash-password < PASSWORD_FILE"


def _call_parsers(commands_: Commands) -> None:
    output = _Parser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of text")
    connection = _Parser(add_help=False)
    connection.add_argument("--config", metavar="FILE", help=CONFIG)
    connection.add_argument("--address", help="Temporal address host:port")
    connection.add_argument("--namespace", help="Temporal namespace")
    connection.add_argument("--task-queue", help="the deployment's task queue")
    both = [connection, output]
    _mcp_parser(commands_, connection)
    _inbox_parser(commands_, connection)

    call = _command(commands_, "call", parents=both)
    call.add_argument("tool", metavar="TOOL", help=TOOL)
    call.add_argument(
        "arguments",
        metavar="ARGS_JSON",
        nargs="?",
        default="{}",
        help="the tool's arguments: a JSON object (default {}), or @FILE to read it from a file",
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
    call.add_argument(
        "--id", metavar="WORKFLOW_ID", help="the call's workflow id (default toolcall-<uuid>)"
    )
    call.add_argument(
        "--as", dest="principal", metavar="ID", help="whom the call acts for (its principal)"
    )
    call.add_argument(
        "--as-attr",
        dest="principal_attrs",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="an attribute of the principal (repeatable), e.g. tenant=acme",
    )
    call.add_argument(
        "--no-wait",
        action="store_true",
        help="print the workflow id once the call is planned, instead of the result",
    )
    call.add_argument(
        "--notify",
        metavar="WEBHOOK",
        help="when the call ends, post a signed 'finished' notification to this webhook of the "
        "deployment ([[notifications.webhooks]]: its name or URL)",
    )

    pending = _command(commands_, "pending", parents=both)
    pending.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_PAGE_SIZE,
        help=f"list at most this many (a page; 1-{MAX_PAGE_SIZE})",
    )
    pending.add_argument(
        "--page-token", metavar="TOKEN", help="the next page, as the previous one printed it"
    )
    decisions_ = _command(commands_, "decisions", parents=both)
    decisions_.add_argument(
        "--since",
        type=arguments.duration,
        default=arguments.duration("1h"),
        metavar="DURATION",
        help="calls started within this long, such as 30m, 1h or 7d (default 1h)",
    )
    decisions_.add_argument(
        "--limit", type=int, default=100, help="list at most this many (1-1000)"
    )
    show = _command(commands_, "show", parents=both)
    show.add_argument("workflow_id", metavar="WORKFLOW_ID", help=WORKFLOW_ID)
    watch = _command(commands_, "watch", parents=both)
    watch.add_argument("workflow_id", metavar="WORKFLOW_ID", help=WORKFLOW_ID)
    watch.add_argument(
        "--from",
        dest="from_offset",
        metavar="N",
        type=arguments.offset,
        default=0,
        help="start at this offset (default 0, the oldest item the call still keeps)",
    )
    reconcile = _command(commands_, "reconcile", parents=both)
    reconcile.add_argument("workflow_id", metavar="WORKFLOW_ID", help=WORKFLOW_ID)
    cancel = _command(commands_, "cancel", parents=both)
    cancel.add_argument("workflow_id", metavar="WORKFLOW_ID", help=WORKFLOW_ID)
    cancel.add_argument("--reason", metavar="TEXT", help="why (recorded in the call's history)")

    for verb in ("approve", "deny", "respond"):
        decide = _command(commands_, verb, parents=both)
        decide.add_argument("workflow_id", metavar="WORKFLOW_ID", help=WORKFLOW_ID)
        if verb == "respond":
            decide.add_argument(
                "text", metavar="TEXT", help="what the model reads in place of the tool's output"
            )
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
    _grants_parser(commands_, both)
    _connections_parser(commands_, output)
    answer = _command(commands_, "answer", parents=both)
    answer.add_argument("workflow_id", metavar="WORKFLOW_ID", help=WORKFLOW_ID)
    answer.add_argument("text", metavar="TEXT", nargs="?", help="the answer")
    answer.add_argument("--decline", action="store_true", help="decline to answer")
    answer.add_argument("--by", metavar="NAME", help="who answers (default: your user name)")

    policy_ = _command(commands_, "policy")
    policy_commands = policy_.add_subparsers(
        dest="policy_command", metavar="COMMAND", title="commands", parser_class=_Parser
    )
    policy_test = policy_commands.add_parser(
        "test",
        help=cli_help.COMMANDS["policy"].line,
        description=cli_help.COMMANDS["policy"].line,
        epilog=cli_help.COMMANDS["policy"].epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    policy_test.add_argument("cases", metavar="CASES.toml", help="the example requests")
    policy_test.add_argument("--config", metavar="FILE", help=CONFIG)

    tools = _command(commands_, "tools", parents=[output])
    tools.add_argument("--config", metavar="FILE", help=CONFIG)
    tools.add_argument(
        "--format",
        choices=DEFINITION_FORMATS,
        help="print the definitions as JSON in this provider's shape (--json: anthropic)",
    )
    tools.add_argument("--profile", metavar="NAME", help="only the tools of this profile")
    replay_ = _command(commands_, "replay", parents=[output])
    replay_.add_argument(
        "histories",
        metavar="HISTORY.json",
        nargs="+",
        help="histories exported with `temporal workflow show --output json`",
    )
    replay_.add_argument(
        "--workflow",
        metavar="MODULE:CLASS",
        action="append",
        help="also replay histories of this workflow class of yours (imported from the working "
        "directory); repeat for several",
    )
    replay_.add_argument(
        "--config", metavar="FILE", help=f"{CONFIG}: its [codec] keys, [payloads] store"
    )


def _grants_parser(commands_: Commands, both: list[_Parser]) -> None:
    grants = _command(commands_, "grants")
    grant_commands = grants.add_subparsers(
        dest="grants_command", metavar="COMMAND", title="commands", parser_class=_Parser
    )
    for name in ("list", "revoke"):
        text = cli_help.GRANT_COMMANDS[name]
        grant_commands.add_parser(
            name,
            parents=both,
            help=text.line,
            description=text.line,
            epilog=text.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    listed = grant_commands.choices["list"]
    listed.add_argument("--tool", metavar="TOOL", help="only this tool's")
    revoke = grant_commands.choices["revoke"]
    revoke.add_argument("grant_id", metavar="GRANT_ID", help="the grant's id, as `list` shows it")
    revoke.add_argument("--by", metavar="NAME", help="who revokes (default: your user name)")
    revoke.add_argument("--reason", metavar="TEXT", help="why")


def _connections_parser(commands_: Commands, output: _Parser) -> None:
    connections = _command(commands_, "connections")
    subcommands = connections.add_subparsers(
        dest="connections_command", metavar="COMMAND", title="commands", parser_class=_Parser
    )
    for name in ("list", "revoke"):
        text = cli_help.CONNECTION_COMMANDS[name]
        sub = subcommands.add_parser(
            name,
            parents=[output],
            help=text.line,
            description=text.line,
            epilog=text.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.add_argument("--config", metavar="FILE", help=CONFIG)
    revoke = subcommands.choices["revoke"]
    revoke.add_argument("provider", metavar="PROVIDER", help="google or microsoft")
    revoke.add_argument("principal", metavar="PRINCIPAL", help="the principal's id")


def _address(value: str) -> str:
    try:
        split_address(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _inbox_url(value: str) -> str:
    try:
        return inbox_origin(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
