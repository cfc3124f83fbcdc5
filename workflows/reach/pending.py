"""Listing the calls that wait for a human, from visibility (no worker needed).

A waiting call is a running ``ToolCallWorkflow`` whose status search attribute says it waits for
an approval or an answer, or an inline call that a running parent lists in its memo (the parent
counts them in ``SEARCH_INLINE_WAITING``). ``pending_page`` pages through them with tokens that
carry the total counted for the first page.
"""

from __future__ import annotations

import base64
import binascii
import zlib

from temporalio.client import Client

from toolcalls.workflows.models.call import (
    SEARCH_INLINE_WAITING,
    SEARCH_STATUS,
    WORKFLOW_NAME,
    Phase,
)
from toolcalls.workflows.models.views import PendingCall, PendingPage
from toolcalls.workflows.reach.waiting import waiting_calls

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1_000
WAITING_CALLS = (
    f'WorkflowType = "{WORKFLOW_NAME}" AND '
    f'{SEARCH_STATUS.name} IN ("{Phase.AWAITING_APPROVAL.value}", "{Phase.AWAITING_ANSWER.value}")'
)
"""Calls waiting for a human: their ``ToolCallWorkflow``s."""
WAITING_PARENTS = f"{SEARCH_INLINE_WAITING.name} > 0"
"""Parents whose inline calls wait for a human (the memo lists them)."""
PENDING_QUERY = f'ExecutionStatus = "Running" AND (({WAITING_CALLS}) OR {WAITING_PARENTS})'
PAGE_TOKEN_TAG = b"toolcalls-pending:2:"
"""Begins a ``pending_page`` token: then the listing's total, a checksum of the server's token
and the server's token itself."""


async def list_pending(client: Client, *, limit: int) -> list[PendingCall]:
    """Up to ``limit`` waiting calls, newest first; inline calls at their parent's place."""
    found: list[PendingCall] = []
    async for execution in client.list_workflows(PENDING_QUERY, limit=limit):
        found += await waiting_calls(execution)
        if len(found) >= limit:
            break
    return found[:limit]


async def pending_page(
    client: Client, *, page_size: int = DEFAULT_PAGE_SIZE, page_token: str | None = None
) -> PendingPage:
    """One page of the calls waiting for a human, with how many wait in all and the token of
    the next page (``None`` on the last). A page holds ``page_size`` workflows: a parent
    brings all its waiting inline calls, so a page may hold more calls than that. The total
    counts every call, so it reads the count of each parent whose inline calls wait.

    The total is counted for the first page and carried by the tokens of the pages after it:
    a count reads every waiting call, so counting for each page would make listing them all
    cost the square of their number. A page read with a token shows the total as it was when
    the listing began.

    Raises:
        ValueError: ``page_size`` is not 1-1000.
        PageTokenError: ``page_token`` is not one a page gave (nothing reaches the server).
    """
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be 1-{MAX_PAGE_SIZE}")
    token, total = _read_page_token(page_token) if page_token else (None, None)
    listing = client.list_workflows(PENDING_QUERY, page_size=page_size, next_page_token=token)
    await listing.fetch_next_page()
    calls = [c for e in listing.current_page or [] for c in await waiting_calls(e)]
    if total is None:
        total = await _waiting_total(client)
    following = listing.next_page_token
    return PendingPage(
        calls=calls,
        total=total,
        next_page_token=_page_token(following, total) if following else None,
    )


async def _waiting_total(client: Client) -> int:
    counted = await client.count_workflows(f'ExecutionStatus = "Running" AND {WAITING_CALLS}')
    total = counted.count
    parents = f'ExecutionStatus = "Running" AND {WAITING_PARENTS}'
    async for parent in client.list_workflows(parents):
        total += parent.typed_search_attributes.get(SEARCH_INLINE_WAITING) or 0
    return total


class PageTokenError(ValueError):
    """A ``page_token`` that no ``pending_page`` gave, or a damaged copy of one."""


def _page_token(server_token: bytes, total: int) -> str:
    """The next page's token: the server's, with the total counted for the first page and a
    checksum that lets a damaged copy be refused before the server sees it."""
    head = f"{total}:{zlib.crc32(server_token):08x}:".encode()
    return base64.urlsafe_b64encode(PAGE_TOKEN_TAG + head + server_token).decode()


def _read_page_token(page_token: str) -> tuple[bytes, int]:
    """The server's token and the carried total.

    Only a token ``pending_page`` gave is sent to the server: it answers anything else (a typo, a
    truncated copy) with an internal error that the client retries for seconds.

    Raises:
        PageTokenError: the token is not one that ``pending_page`` returned, or it was damaged.
    """
    try:
        raw = base64.b64decode(page_token.encode(), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    total, _, rest = raw.removeprefix(PAGE_TOKEN_TAG).partition(b":")
    checksum, _, server_token = rest.partition(b":")
    if not (
        raw.startswith(PAGE_TOKEN_TAG)
        and total.isdigit()
        and server_token
        and checksum == f"{zlib.crc32(server_token):08x}".encode()
    ):
        raise PageTokenError("not a token a previous page gave, or cut short")
    return server_token, int(total)
