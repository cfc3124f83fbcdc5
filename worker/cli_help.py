"""The help texts of ``toolcalls``: each command's one-line description and its example.

``toolcalls --help`` lists the commands with their line; ``toolcalls COMMAND --help`` starts with
it and ends with the example.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolcalls.worker.config import CONFIG_ENV


@dataclass(frozen=True)
class Help:
    """One command's help: a line saying what it does, and an example to copy."""

    line: str
    example: str

    @property
    def epilog(self) -> str:
        return "example:\n" + "\n".join(f"  {line}" for line in self.example.splitlines())


COMMANDS: dict[str, Help] = {
    "worker": Help(
        "run a worker: the tool-call workflow and the enabled tools, until SIGINT or SIGTERM",
        "toolcalls worker --config toolcalls.toml\n"
        "toolcalls worker --dev --inbox --config toolcalls.toml   # a dev server and the inbox too",
    ),
    "dev": Help(
        "run only the embedded Temporal dev server, until SIGINT or SIGTERM",
        "toolcalls dev --db .toolcalls/temporal.db --port 7233 --ui-port 8233",
    ),
    "codec-server": Help(
        "serve Temporal's remote codec protocol, so that its UI and CLI show decrypted payloads",
        "toolcalls codec-server --config toolcalls.toml --listen 127.0.0.1:8081",
    ),
    "prune-payloads": Help(
        "delete the stored payloads of the local store last stored more than DAYS ago",
        "toolcalls prune-payloads --config toolcalls.toml --older-than-days 40",
    ),
    "mcp": Help(
        "serve the enabled tools to MCP clients, over stdio or streamable HTTP",
        "toolcalls mcp --config toolcalls.toml\n"
        "TOOLCALLS_MCP_TOKEN=... toolcalls mcp --http 127.0.0.1:8765 --config toolcalls.toml",
    ),
    "inbox": Help(
        "serve the approval inbox, a web page for deciding the calls that wait for people",
        "toolcalls inbox --config toolcalls.toml --listen 127.0.0.1:8234\n"
        "printf '%s\\n' \"$PASSWORD\" | toolcalls inbox hash-password   # for [[inbox.users]]",
    ),
    "call": Help(
        "run one tool call and print its result (exit 0 only if it completed)",
        'toolcalls call calculator \'{"expression": "6 * 7"}\'\n'
        "toolcalls call create_file @args.json --no-wait --id write-1",
    ),
    "pending": Help(
        "list the calls waiting for an approval or an answer (no worker needed)",
        "toolcalls pending --limit 20",
    ),
    "show": Help(
        "show one call: its status, pending request or question, events and result",
        "toolcalls show write-1",
    ),
    "watch": Help(
        "follow a call's progress (a command's output, bytes, pages) to its result",
        "toolcalls watch build-1\ntoolcalls watch build-1 --from 1200 --json",
    ),
    "reconcile": Help(
        "ask the backend whether an uncertain call's write happened, and record the answer",
        "toolcalls reconcile write-1",
    ),
    "cancel": Help(
        "stop a call: waiting or running, it ends canceled (uncertain for a write under way)",
        'toolcalls cancel write-1 --reason "wrong branch"',
    ),
    "approve": Help(
        "approve the request a call waits on",
        'toolcalls approve write-1 --by alice --reason "looks right"',
    ),
    "deny": Help(
        "deny the request a call waits on",
        'toolcalls deny write-1 --by alice --reason "wrong folder"',
    ),
    "respond": Help(
        "answer the request a call waits on in place of the tool (the tool does not run)",
        'toolcalls respond write-1 "Use the reports folder instead." --by alice',
    ),
    "answer": Help(
        "answer the question an ask_user call waits on, or decline it",
        "toolcalls answer q-1 CSV\ntoolcalls answer q-1 --decline",
    ),
    "grants": Help(
        "list the standing grants in force, or revoke one",
        "toolcalls grants list --tool create_file\n"
        'toolcalls grants revoke GRANT_ID --by alice --reason "done"',
    ),
    "connections": Help(
        "list the principals' connected accounts, or revoke one (no server needed)",
        "toolcalls connections list\ntoolcalls connections revoke google alice",
    ),
    "decisions": Help(
        "list recent calls' policy decisions: principal, tool, effect and what decided it",
        "toolcalls decisions --since 1h",
    ),
    "policy": Help(
        "test the deployment's policies against example requests (no server needed)",
        "toolcalls policy test cases.toml",
    ),
    "tools": Help(
        "list the tools the configuration enables (no server needed)",
        "toolcalls tools --config toolcalls.toml --format openai",
    ),
    "replay": Help(
        "replay exported histories against this version, to check an upgrade",
        "temporal workflow show -w calc-1 --output json > calc-1.json\n"
        "toolcalls replay calc-1.json",
    ),
}

GRANT_COMMANDS: dict[str, Help] = {
    "list": Help("list the standing grants in force", "toolcalls grants list --tool create_file"),
    "revoke": Help(
        "end a standing grant now", 'toolcalls grants revoke GRANT_ID --by alice --reason "done"'
    ),
}

CONNECTION_COMMANDS: dict[str, Help] = {
    "list": Help(
        "list the connections: provider, principal, scopes and expiry (never a token)",
        "toolcalls connections list --json",
    ),
    "revoke": Help(
        "delete a principal's connection: their next call asks for consent again",
        "toolcalls connections revoke google alice",
    ),
}

TOOLCALLS = "durable, policy-checked agent tool calls, as Temporal workflows"
EPILOG = (
    f"Every command reads --config FILE, or the file ${CONFIG_ENV} names. "
    "`toolcalls COMMAND --help` shows a command's options and an example.\n"
    "exit status: 0 success, 1 the call or action did not succeed, 2 usage, configuration or "
    "connection error (one line on stderr says why)"
)

CONFIG = f"the deployment's TOML configuration (default: the file ${CONFIG_ENV} names)"
TOOL = "the tool's name, as `toolcalls tools` lists them (calculator, read_file, ...)"
WORKFLOW_ID = (
    "the call's workflow id, as `call --no-wait` printed it or `toolcalls pending` lists it"
)
