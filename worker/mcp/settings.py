"""The ``[mcp]`` section: how ``toolcalls mcp`` serves the deployment's tools to MCP clients.

Secrets never sit in the file: ``token_env`` names the environment variable that holds the bearer
token HTTP clients may send; ``[mcp.oauth]`` (``oauth_settings``) accepts OAuth access tokens.
The identity the server asserts for answers and decisions comes from here (or, over stdio, from
the local user; or from a verified access token), never from the client.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.activities.network.http_paths import check_env_name
from toolcalls.worker.mcp.oauth_settings import OAuthSection
from toolcalls.workflows.models.approval import MAX_APPROVER_CHARS
from toolcalls.workflows.rules.identities import canonical_name

DEFAULT_LISTEN = "127.0.0.1:8765"
DEFAULT_TOKEN_ENV = "TOOLCALLS_MCP_TOKEN"
DEFAULT_STATE_KEY_ENV = "TOOLCALLS_MCP_STATE_KEY"


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

    inbox_url: str | None = None
    """The approval inbox's public URL (``http(s)://HOST[:PORT][/PATH]``, ``--inbox-url``): a
    waiting approval is handed to a person as a link to the call's page there, and progress
    names it instead of ``[notifications] link``."""
    state_key_env: str = DEFAULT_STATE_KEY_ENV
    """The environment variable holding the key (32+ characters) that seals ``requestState``
    and task ids; unset: a key of the process's own, so neither survives a restart."""

    @field_validator("inbox_url")
    @classmethod
    def _inbox_url(cls, url: str | None) -> str | None:
        return None if url is None else inbox_origin(url)

    @field_validator("user")
    @classmethod
    def _user(cls, name: str | None) -> str | None:
        return None if name is None else canonical_name(name, "user")

    @field_validator("token_env", "state_key_env")
    @classmethod
    def _env_name(cls, name: str) -> str:
        return check_env_name(name)


def inbox_origin(url: str) -> str:
    """``url`` as the inbox's base URL, without a trailing slash.

    Raises:
        ValueError: not an absolute ``http``/``https`` URL, or one with a query or fragment.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL (the inbox's public address)")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: the inbox's URL takes no query or fragment")
    return url.strip().rstrip("/")
