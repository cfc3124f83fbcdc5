"""Wire models of per-principal connections: a call that waits until its principal connects.

A tool the deployment backs with a connection (``[calendar] connection = "google"``) acts with
the OAuth tokens of the call's own principal. When the plan finds none, it records a
``ConsentRequest``: the provider, the principal and the inbox's consent link (a signed ticket,
never a token); the workflow publishes it and waits durably for ``CONNECTED_SIGNAL``, which the
inbox sends once it has stored the principal's tokens.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

CONNECTED_SIGNAL = "connected"
MEMO_PENDING_CONNECTION = "pending_connection"
DEFAULT_CONSENT_TIMEOUT = timedelta(hours=1)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConsentRequest(_Model):
    """What a call waits for: ``principal`` connecting their ``provider`` account at ``url``."""

    provider: str
    principal: str
    url: str
    """The inbox's ``/connections/start`` link, bound to this call and principal."""
    timeout: timedelta | None = DEFAULT_CONSENT_TIMEOUT
    expires_at: datetime | None = None
    """Set by the workflow when it starts waiting."""


class ConnectedNotice(_Model):
    """The payload of ``CONNECTED_SIGNAL``: this principal's tokens for ``provider`` are stored."""

    provider: str
    principal: str
