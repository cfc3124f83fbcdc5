"""The inbox's consent pages: ``/connections/start`` and ``/connections/callback``.

``start`` takes the ticket a waiting call published (``toolcalls.activities.connections.oauth``),
checks it, and sends the browser to the provider's authorization endpoint with a new PKCE
challenge (S256) and a sealed ``state`` that carries the ticket and the verifier. ``callback``
opens the state (a changed or foreign one is refused), exchanges the code at the token endpoint
with the verifier, stores the tokens under the ticket's principal, and signals ``connected`` to
the call and to every other call waiting for that principal's account. By default the person
must be signed in to the inbox as the ticket's principal: whoever consents decides which account
the principal's calls act on.
"""

from __future__ import annotations

import asyncio
import html
import logging
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from temporalio.client import Client
from temporalio.service import RPCError

from toolcalls.activities.connections import BadTicket, Connections, OAuthError, Ticket
from toolcalls.activities.connections.oauth import exchange_code, pkce_pair
from toolcalls.worker.inbox.auth import Refusal
from toolcalls.workflows.models.call import SEARCH_STATUS, WORKFLOW_NAME, Phase
from toolcalls.workflows.models.connection import (
    CONNECTED_SIGNAL,
    MEMO_PENDING_CONNECTION,
    ConnectedNotice,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolcalls.worker.inbox.base import Inbox

log = logging.getLogger("toolcalls.inbox")
MAX_TOLD = 1_000
"""At most this many other waiting calls of the principal are told of a new connection."""
WAITING_FOR_CONNECTION = (
    f'WorkflowType = "{WORKFLOW_NAME}" AND ExecutionStatus = "Running" AND '
    f'{SEARCH_STATUS.name} = "{Phase.AWAITING_CONNECTION.value}"'
)


def _connections(inbox: Inbox) -> Connections:
    if inbox.connections is None:
        raise Refusal(404, "this inbox has no [connections]")
    connections: Connections = inbox.connections
    return connections


def _check_person(inbox: Inbox, request: Request, ticket: Ticket) -> None:
    """The signed-in person is the ticket's principal (unless the deployment says otherwise)."""
    if not _connections(inbox).settings.inbox_user_must_match:
        return
    viewer = inbox.viewer(request)
    if viewer is None:
        raise Refusal(401, "sign in to the inbox, then follow the link again")
    if viewer.identity.name != ticket.principal:
        raise Refusal(
            403,
            f"this link connects {ticket.principal}'s account; you are signed in as "
            f"{viewer.identity.name}",
        )


async def _tell_waiting_calls(client: Client, ticket: Ticket) -> None:
    """Signal ``connected`` to the ticket's call and to every other call that waits for the same
    principal's account (as visibility lists them), so none waits out its timer."""
    notice = ConnectedNotice(provider=ticket.provider, principal=ticket.principal)
    targets = [ticket.workflow_id]
    try:
        async for execution in client.list_workflows(WAITING_FOR_CONNECTION, limit=MAX_TOLD):
            pending = (await execution.memo()).get(MEMO_PENDING_CONNECTION)
            if (
                isinstance(pending, dict)
                and pending.get("provider") == ticket.provider
                and pending.get("principal") == ticket.principal
                and execution.id not in targets
            ):
                targets.append(execution.id)
    except (RPCError, ValueError) as exc:  # the ticket's own call is still told
        log.info("calls waiting for a connection could not be listed: %s", exc)
    for workflow_id in targets:
        try:
            await client.get_workflow_handle(workflow_id).signal(CONNECTED_SIGNAL, notice)
        except RPCError as exc:  # the call ended meanwhile: the connection serves the next one
            log.info("call %s was not told of the connection: %s", workflow_id, exc.message)


async def start(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import RedirectResponse

    connections = _connections(inbox)
    try:
        ticket = connections.sealer.open_ticket(request.query_params.get("ticket", ""))
    except BadTicket as exc:
        raise Refusal(400, str(exc)) from None
    _check_person(inbox, request, ticket)
    provider = connections.settings.provider(ticket.provider)
    if provider is None:
        raise Refusal(400, f"no {ticket.provider} client is configured")
    verifier, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": connections.settings.redirect_uri,
        "scope": " ".join(provider.scope_list),
        "state": connections.sealer.state(ticket, verifier),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    if provider.name == "google":
        # A refresh token is given only for offline access, and again only with consent.
        params.update(access_type="offline", prompt="consent", include_granted_scopes="true")
    separator = "&" if "?" in provider.authorize_endpoint else "?"
    return RedirectResponse(
        f"{provider.authorize_endpoint}{separator}{urlencode(params)}", status_code=303
    )


async def callback(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import HTMLResponse

    connections = _connections(inbox)
    query = request.query_params
    try:
        ticket, verifier = connections.sealer.open_state(query.get("state", ""))
    except BadTicket as exc:
        raise Refusal(400, str(exc)) from None
    _check_person(inbox, request, ticket)
    if query.get("error"):
        raise Refusal(
            400,
            f"{ticket.provider} did not connect the account ({query.get('error', '')[:64]}); "
            "the call keeps waiting until its time is up",
        )
    code = query.get("code", "")
    if not code:
        raise Refusal(400, "the provider sent no authorization code")
    provider = connections.provider(ticket.provider)
    try:
        tokens = await exchange_code(
            provider,
            connections.client_secret(provider),
            code=code,
            verifier=verifier,
            redirect_uri=connections.settings.redirect_uri,
        )
    except OAuthError as exc:
        raise Refusal(502, f"connecting failed: {exc}") from None
    await asyncio.to_thread(connections.store.put, ticket.provider, ticket.principal, tokens)
    log.info("%s connection of %s stored", ticket.provider, ticket.principal)
    await _tell_waiting_calls(inbox.calls.client, ticket)
    text = html.escape(f"{ticket.principal}'s {ticket.provider} account is connected")
    return HTMLResponse(
        "<!doctype html><html lang=en><meta charset=utf-8><title>connected</title>"
        f"<p>{text}. The call goes on; you can close this page.</p></html>"
    )
