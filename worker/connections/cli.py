"""``toolcalls connections list|revoke``: the principals' connections, read from the store.

No server is needed: the command opens the store the configuration names, with its keys. A
listing shows provider, principal, scopes, expiry and whether the row can be refreshed; never a
token. ``revoke`` deletes the row: the principal's next call asks for consent again (the grant
at the provider stays until the person removes it there).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from toolcalls.activities.connections import ConnectionInfo
from toolcalls.worker.config import Config
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError


def run(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    connections = deployment_connections(config, environ)
    if connections is None:
        raise CommandError(
            EXIT_USAGE, "connections: the configuration has no [connections] providers"
        )
    store = connections.store
    try:
        if args.connections_command == "list":
            found = store.list()
            if args.json:
                print(json.dumps({"connections": [_json(row) for row in found]}))
            else:
                print(_text(found))
            return EXIT_OK
        if connections.settings.provider(args.provider) is None:
            raise CommandError(
                EXIT_USAGE, f"connections revoke: no provider {args.provider!r} is configured"
            )
        if not store.revoke(args.provider, args.principal):
            raise CommandError(
                EXIT_FAILED,
                f"connections revoke: {args.principal} has no {args.provider} connection",
            )
        if args.json:
            print(json.dumps({"revoked": {"provider": args.provider, "principal": args.principal}}))
        else:
            print(f"revoked {args.principal}'s {args.provider} connection")
        return EXIT_OK
    finally:
        store.close()


def _json(row: ConnectionInfo) -> dict[str, Any]:
    return {
        "provider": row.provider,
        "principal": row.principal,
        "scopes": list(row.scopes),
        "expires_at": row.expires_at.isoformat() if row.expires_at else None,
        "updated_at": row.updated_at.isoformat(),
        "refreshable": row.refreshable,
    }


def _text(rows: list[ConnectionInfo]) -> str:
    if not rows:
        return "no connections"
    lines = []
    for row in rows:
        expires = row.expires_at.isoformat(timespec="seconds") if row.expires_at else "-"
        refresh = "refreshable" if row.refreshable else "not refreshable"
        lines.append(
            f"{row.provider:<10} {row.principal}  expires {expires}  {refresh}  "
            f"scopes: {' '.join(row.scopes) or '-'}"
        )
    return "\n".join(lines)
