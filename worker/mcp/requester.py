"""Who one request is, when an OAuth access token says so (``[mcp.oauth]``).

Over stdio and with the static bearer token, every request is the server's MCP user (``[mcp]
user``) on the server's profile: the ``Front`` as built. A request an access token authorized
(``toolcalls.worker.mcp.auth``) is its token's principal, ``oauth:<iss>#<sub>``, on the profile
its scopes unlock: the same front with that identity and profile, so the call records the
principal as who asked (``mcp_user``, shown in the inbox), scopes its idempotency keys to it, and
answers or decides through the client as it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from toolcalls.worker.mcp.front import Front
from toolcalls.worker.mcp.oauth import PROFILE_KEY, verified_principal
from toolcalls.worker.mcp.tools import tool_definitions


def request_front(front: Front, ctx: Any) -> Front:
    """``front`` as the request of ``ctx`` sees it (see the module docstring)."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if not isinstance(scope, Mapping):
        return front
    principal = verified_principal(scope)
    if principal is None:
        return front
    profile = scope.get(PROFILE_KEY)
    if not isinstance(profile, str):
        profile = None
    tools = front.tools if profile == front.profile else tool_definitions(front.catalog, profile)
    return replace(front, identity=principal, profile=profile, tools=tools)
