"""Whose connection the running tool call acts through: set by the activity, read per request.

A backend is built once per worker; its credentials are read when each request is sent. For a
connection-backed tool they are the tokens of the principal this variable holds, which the tool
activity sets from its attested input for exactly the duration of the call.
"""

from __future__ import annotations

from contextvars import ContextVar

acting_principal: ContextVar[str | None] = ContextVar("toolcalls_acting_principal", default=None)
