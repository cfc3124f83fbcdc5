"""Per-principal connections: each principal's own Google or Microsoft account for the calendar
and email tools, with their consent, and their tokens never in history.

``Connections`` (the store, the OAuth clients, the tokens a tool acts with),
``ConnectionsSettings`` (``[connections]``) and ``acting_principal`` (whom a running call acts
for). The consent pages are the inbox's (``toolcalls.worker.inbox.connect``); the wait is the
workflow's (``toolcalls.workflows.call.connections``).
"""

from toolcalls.activities.connections.acting import acting_principal
from toolcalls.activities.connections.connections import Connections, NotConnected
from toolcalls.activities.connections.oauth import BadTicket, OAuthError, Sealer, Ticket
from toolcalls.activities.connections.settings import (
    BACKEND_PROVIDERS,
    ConnectionsSettings,
    ProviderSettings,
)
from toolcalls.activities.connections.store import ConnectionInfo, ConnectionStore, Tokens

__all__ = [
    "BACKEND_PROVIDERS",
    "BadTicket",
    "ConnectionInfo",
    "ConnectionStore",
    "Connections",
    "ConnectionsSettings",
    "NotConnected",
    "OAuthError",
    "ProviderSettings",
    "Sealer",
    "Ticket",
    "Tokens",
    "acting_principal",
]
