"""``Connections``: what tools, the plan, the inbox and the CLI use of the per-principal store.

A tool acts with the tokens of the principal its attested input names (``acting_principal``),
read when each request is sent: an access token that expires within ``REFRESH_MARGIN`` is
refreshed first (one refresh at a time per connection in this process) and the new tokens
stored. A refresh the provider refuses (``invalid_grant``: revoked or expired at the provider)
deletes the row, so the next call asks for consent again. No token is ever logged, returned or
put into a message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import httpx
from temporalio import activity

from toolcalls.activities.connections.acting import acting_principal
from toolcalls.activities.connections.oauth import OAuthError, Sealer, Ticket, refresh
from toolcalls.activities.connections.settings import (
    START_PATH,
    ConnectionsSettings,
    ProviderSettings,
)
from toolcalls.activities.connections.store import ConnectionStore, StoreError, Tokens
from toolcalls.activities.errors import tool_error
from toolcalls.activities.network.service import Credentials
from toolcalls.workflows.models.call import ErrorCode
from toolcalls.workflows.models.connection import ConsentRequest

log = logging.getLogger(__name__)
REFRESH_MARGIN = timedelta(seconds=60)
TICKET_SLACK = timedelta(minutes=5)
"""A consent link stays valid this long past the call's own wait."""


class NotConnected(LookupError):
    """The principal has no usable connection to the provider."""


class Connections:
    """The deployment's ``[connections]``: its store, its OAuth clients and their secrets."""

    def __init__(
        self,
        settings: ConnectionsSettings,
        store: ConnectionStore,
        sealer: Sealer,
        environ: Mapping[str, str],
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.sealer = sealer
        self._environ = environ
        self._transport = transport
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def provider(self, name: str) -> ProviderSettings:
        found = self.settings.provider(name)
        if found is None:
            raise NotConnected(f"no [[connections.providers]] named {name}")
        return found

    def client_secret(self, provider: ProviderSettings) -> str | None:
        if provider.client_secret_env is None:
            return None
        value = self._environ.get(provider.client_secret_env, "").strip()
        if not value:
            raise OAuthError(
                f"connections: the variable {provider.client_secret_env} is not set on this host"
            )
        return value

    async def is_connected(self, provider: str, principal: str) -> bool:
        return await asyncio.to_thread(self.store.connected, provider, principal)

    async def access_token(self, provider: str, principal: str) -> str:
        """The principal's access token, refreshed when it expires soon.

        Raises:
            NotConnected: no connection, or one that can no longer be used.
        """
        lock = self._locks.setdefault((provider, principal), asyncio.Lock())
        async with lock:
            try:
                tokens = await asyncio.to_thread(self.store.get, provider, principal)
            except StoreError as exc:
                raise NotConnected(str(exc)) from None
            if tokens is None:
                raise NotConnected(f"{principal} has not connected a {provider} account")
            if tokens.expires_at is None or tokens.expires_at - REFRESH_MARGIN > _now():
                return tokens.access_token
            return await self._refreshed(provider, principal, tokens)

    async def _refreshed(self, provider: str, principal: str, tokens: Tokens) -> str:
        if tokens.refresh_token is None:
            raise NotConnected(f"{principal}'s {provider} token expired and cannot be refreshed")
        settings = self.provider(provider)
        try:
            fresh = await refresh(
                settings, self.client_secret(settings), tokens.refresh_token, self._transport
            )
        except OAuthError as exc:
            if exc.code in ("invalid_grant", "unauthorized_client"):
                await asyncio.to_thread(self.store.revoke, provider, principal)
                log.info("%s connection of %s refused at refresh: removed", provider, principal)
                raise NotConnected(
                    f"{principal}'s {provider} connection was revoked at the provider"
                ) from None
            raise
        await asyncio.to_thread(self.store.put, provider, principal, fresh)
        log.info("%s connection of %s refreshed", provider, principal)
        return fresh.access_token

    def bearer(self, provider: str, label: str) -> Credentials:
        """Headers for one request, with the acting principal's token; messages name the
        running activity (``label`` outside one)."""

        async def headers() -> Mapping[str, str]:
            principal = acting_principal.get()
            tool = activity.info().activity_type if activity.in_activity() else label
            if principal is None:
                raise tool_error(
                    ErrorCode.CONNECTION_REQUIRED,
                    f"{tool}: acts with each principal's own {provider} account, and the call "
                    "names no principal",
                )
            try:
                token = await self.access_token(provider, principal)
            except NotConnected as exc:
                raise tool_error(
                    ErrorCode.CONNECTION_REQUIRED,
                    f"{tool}: {exc}; call again to be asked to connect; nothing was sent",
                ) from None
            except OAuthError as exc:
                raise tool_error(
                    ErrorCode.EXECUTION_FAILED,
                    f"{tool}: refreshing {principal}'s {provider} token failed: {exc}",
                    retryable=True,
                ) from None
            return {"Authorization": f"Bearer {token}"}

        return headers

    def consent(
        self, provider: str, principal: str, workflow_id: str, call_id: str
    ) -> ConsentRequest:
        """The consent link for ``principal``, bound to this call."""
        seconds = self.settings.consent_timeout_seconds
        timeout = timedelta(seconds=seconds) if seconds is not None else None
        lifetime = (timeout or timedelta(days=7)) + TICKET_SLACK
        ticket = Ticket(
            provider=provider,
            principal=principal,
            workflow_id=workflow_id,
            call_id=call_id,
            expires=int((_now() + lifetime).timestamp()),
        )
        query = urlencode({"ticket": self.sealer.ticket(ticket)})
        return ConsentRequest(
            provider=provider,
            principal=principal,
            url=f"{self.settings.public_url}{START_PATH}?{query}",
            timeout=timeout,
        )


def _now() -> datetime:
    return datetime.now(UTC)
