"""The ``[mcp]`` section: how ``toolcalls mcp`` serves the deployment's tools to MCP clients.

Secrets never sit in the file: ``token_env`` names the environment variable that holds the bearer
token HTTP clients may send; ``[mcp.oauth]`` (``oauth_settings``) accepts OAuth access tokens.
The identity the server asserts for answers and decisions comes from here (or, over stdio, from
the local user; or from a verified access token), never from the client.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.activities.network.http_paths import check_env_name
from toolcalls.worker.mcp.oauth_settings import OAuthSection
from toolcalls.workflows.models.approval import MAX_APPROVER_CHARS
from toolcalls.workflows.rules.identities import canonical_name

DEFAULT_LISTEN = "127.0.0.1:8765"
DEFAULT_TOKEN_ENV = "TOOLCALLS_MCP_TOKEN"


class McpSection(BaseModel):
    """``toolcalls mcp``: the HTTP listener, its token, and who the MCP user is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    listen: str = DEFAULT_LISTEN
    """``HOST:PORT`` for ``--http`` without a value; loopback unless the file says otherwise."""
    token_env: str = DEFAULT_TOKEN_ENV
    """The environment variable holding the bearer token every HTTP request must carry."""
    user: str | None = Field(default=None, min_length=1, max_length=MAX_APPROVER_CHARS)
    """The MCP user's name: the responder of answers and the approver of decisions given
    through the client. Over HTTP it is the name bound to the token; over stdio it defaults to
    the local user (like ``toolcalls approve --by``). Written canonically (``alice``, not
    ``Alice``), as decisions record it."""
    profile: str | None = None
    """Offer only this deployment profile's tools and hold every call to it (``--profile``)."""
    approve_via_elicitation: bool = False
    """Let the MCP user approve or deny their own calls in the client (elicitation), within what
    ``[approvers]`` allows them; off: approvals come from the inbox, the CLI or an application."""

    oauth: OAuthSection | None = None
    """``[mcp.oauth]``: accept OAuth access tokens over HTTP (``worker/mcp/oauth_settings.py``);
    with it, the static token of ``token_env`` is optional."""

    @field_validator("user")
    @classmethod
    def _user(cls, name: str | None) -> str | None:
        return None if name is None else canonical_name(name, "user")

    @field_validator("token_env")
    @classmethod
    def _token_env(cls, name: str) -> str:
        return check_env_name(name)
