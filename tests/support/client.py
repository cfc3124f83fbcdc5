"""Helpers for ``ToolCallClient`` tests: requests, and polling the pending list."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from toolcalls.workflows.models.call import ToolCallRequest
from toolcalls.workflows.reach.client import PendingCall, ToolCallClient

ASK = {"question": "Which format?", "options": ["JSON", "CSV"]}


def new_call_id() -> str:
    return f"toolu_{uuid.uuid4().hex[:12]}"


def write_request(token: str, **fields: Any) -> ToolCallRequest:
    """A ``probe_write`` call: it needs approval under the default ceiling and has a preview."""
    return ToolCallRequest(
        tool="probe_write", arguments={"token": token}, call_id=new_call_id(), **fields
    )


def question_request(**fields: Any) -> ToolCallRequest:
    return ToolCallRequest(tool="ask_user", arguments=ASK, call_id=new_call_id(), **fields)


async def listed_pending(
    tools: ToolCallClient, *workflow_ids: str, timeout: float = 20
) -> dict[str, PendingCall]:
    """Poll ``pending()`` (visibility is eventually consistent) until it lists every id."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = {p.workflow_id: p for p in await tools.pending() if p.workflow_id in workflow_ids}
        if len(found) == len(workflow_ids):
            return found
        if loop.time() > deadline:
            missing = sorted(set(workflow_ids) - set(found))
            raise AssertionError(f"pending() never listed {missing}")
        await asyncio.sleep(0.2)


async def unlisted_pending(tools: ToolCallClient, *workflow_ids: str, timeout: float = 20) -> None:
    """Poll ``pending()`` until it lists none of the ids."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        still = [p.workflow_id for p in await tools.pending() if p.workflow_id in workflow_ids]
        if not still:
            return
        if loop.time() > deadline:
            raise AssertionError(f"pending() still lists {still}")
        await asyncio.sleep(0.2)
