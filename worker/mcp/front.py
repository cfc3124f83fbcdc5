"""What every request of one ``toolcalls mcp`` process shares, and how a request names its call.

A workflow id runs one call, once (``ToolCallClient.start_or_join``), so the id is what makes a
retried request safe:

- with ``_meta["toolcalls/idempotency_key"]``: ``mcp-key-<sha256(user, key)>``. The key is what
  survives a reconnect or a restart of the client: a later request with it gets the same call
  (joined while it runs, its recorded result once it ended). It is scoped to the MCP user, so one
  user's key never reaches another's call.
- otherwise ``mcp-<sha256(session, request id)>``: the same request of the same session (a
  JSON-RPC retry) is the same call. The session is the streamable HTTP session, or one generated
  per process over stdio (one process serves one client). A request with neither (stateless
  HTTP) gets a fresh id.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolcalls.activities.catalog import Catalog
from toolcalls.worker.mcp.tools import tool_definitions
from toolcalls.workflows.reach.client import ToolCallClient

IDEMPOTENCY_KEY = "toolcalls/idempotency_key"
"""The ``_meta`` key of a ``tools/call`` request that names its call across retries."""
MAX_KEY_CHARS = 200
SESSION_HEADER = "mcp-session-id"


@dataclass(frozen=True)
class Front:
    """The server's shared state: the client, the catalog and who the MCP user is."""

    calls: ToolCallClient
    catalog: Catalog
    identity: str
    """The name answers and decisions given through the client are recorded under."""
    link: str
    """Where a human decides (``[notifications] link``), with ``{workflow_id}`` and
    ``{namespace}`` to fill in."""
    approve_via_elicitation: bool = False
    profile: str | None = None
    """The deployment profile the server offers and holds every call to, if any."""
    process_session: str | None = None
    """The session of every request over stdio; ``None`` over HTTP (each has its own)."""
    tools: list[types.Tool] = field(default_factory=list)
    inbox_url: str | None = None
    """The approval inbox's public URL (``[mcp] inbox_url``): where a person decides."""

    @classmethod
    def build(
        cls,
        calls: ToolCallClient,
        catalog: Catalog,
        *,
        identity: str,
        link: str,
        approve_via_elicitation: bool,
        stdio: bool,
        profile: str | None = None,
        inbox_url: str | None = None,
    ) -> Front:
        return cls(
            calls=calls,
            catalog=catalog,
            identity=identity,
            link=link,
            approve_via_elicitation=approve_via_elicitation,
            profile=profile,
            process_session=uuid.uuid4().hex if stdio else None,
            tools=tool_definitions(catalog, profile),
            inbox_url=inbox_url,
        )

    def offers(self, tool: str) -> bool:
        """Whether the server offers ``tool`` (its profile's, or any enabled tool)."""
        if self.profile is None:
            return tool in self.catalog
        return tool in self.catalog.settings.profiles[self.profile]

    def decide_at(self, workflow_id: str) -> str:
        """The link where a human decides on ``workflow_id``: its page in the inbox, when one is
        configured, else ``[notifications] link``."""
        if self.inbox_url is not None:
            return f"{self.inbox_url}/calls/{workflow_id}"
        namespace = self.calls.client.namespace
        return self.link.replace("{workflow_id}", workflow_id).replace("{namespace}", namespace)

    def session_of(self, request: Any) -> str | None:
        """The session a request belongs to: the process's, or its HTTP session header."""
        if self.process_session is not None:
            return self.process_session
        headers = getattr(request, "headers", None)
        session = headers.get(SESSION_HEADER) if headers is not None else None
        return session if isinstance(session, str) and session else None

    def workflow_id(
        self,
        meta: Mapping[str, Any] | None,
        session: str | None,
        request_id: types.RequestId | None,
    ) -> str:
        """The workflow id of one of this server's ``tools/call`` requests."""
        return call_workflow_id(self.identity, meta, session, request_id)


def call_workflow_id(
    identity: str,
    meta: Mapping[str, Any] | None,
    session: str | None,
    request_id: types.RequestId | None,
) -> str:
    """The workflow id of a ``tools/call`` by ``identity`` (see the module docstring).

    Raises:
        MCPError: the idempotency key is not a nonblank string of at most ``MAX_KEY_CHARS``.
    """
    key = (meta or {}).get(IDEMPOTENCY_KEY)
    if key is not None:
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY_CHARS:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"_meta[{IDEMPOTENCY_KEY!r}] must be a nonblank string of at most "
                f"{MAX_KEY_CHARS} characters",
            )
        return "mcp-key-" + _digest(identity, key)
    if session is None or request_id is None:
        return "mcp-" + _digest(uuid.uuid4().hex)
    return "mcp-" + _digest(session, f"{type(request_id).__name__}:{request_id}")


def _digest(*parts: str) -> str:
    # JSON keeps the parts apart whatever they contain (a newline in a key, say).
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()
