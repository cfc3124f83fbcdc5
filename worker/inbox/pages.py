"""The inbox's pages: the waiting calls, a call, recent decisions, and the versions the live
updates poll.

A page shows the actions only to people the approver rules allow (the actions themselves, and the
same check again, are in ``toolcalls.worker.inbox.actions``). Everything comes from
``ToolCallClient``: ``pending()`` for the list, ``status()`` for a call, ``finished()`` and
``result_of()`` for the recent decisions.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.worker.inbox import rendering, words
from toolcalls.worker.inbox.auth import Refusal
from toolcalls.worker.inbox.base import Inbox, Viewer
from toolcalls.worker.payloads.codec import PayloadKeyError
from toolcalls.worker.payloads.storage import PayloadStoreError
from toolcalls.worker.render import when
from toolcalls.workflows.models.approval import ApprovalRequest, GrantScope
from toolcalls.workflows.models.call import MEMO_METADATA, CallState, ToolCallResult
from toolcalls.workflows.models.views import finished_state, metadata_of
from toolcalls.workflows.reach.client import CallView, FinishedCall, PendingCall

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

GRANT_CHOICES = (900, 3600, 8 * 3600, 86_400, 7 * 86_400)
"""Standing-grant durations offered, in seconds, up to the call's ``max_grant``."""
log = logging.getLogger("toolcalls.inbox")
RESULT_FETCHES = 4
"""Histories read at once for the recent decisions."""
NOTICES = {
    "approved": "Approved.",
    "recorded": "Your approval is recorded; the call waits for more approvers.",
    "remembered": "Approved, and later calls like it are approved by a standing grant.",
    "denied": "Denied.",
    "responded": "Replied: the model reads your reply in place of the tool's output; the tool "
    "did not run.",
    "answered": "Answered.",
    "declined": "You declined to answer.",
    "queued": "Queued: no worker is serving this call; it applies when one does.",
    "edited": "Edited: this is the new preview. Approve it, edit it again, or deny it.",
    "stopped": "Stop requested: the call ends canceled, or uncertain if its write had begun.",
}
HEADINGS = {
    400: "Bad request",
    401: "Not logged in",
    403: "Refused",
    404: "Not found",
    409: "Changed",
    411: "Length required",
    413: "Too large",
    429: "Too many attempts",
    500: "Cannot read the call",
    503: "Temporal is unreachable",
}


def refused(inbox: Inbox, request: Request, refusal: Refusal) -> Response:
    """The page (or, under ``/api/``, the JSON) saying why a request was refused; it keeps the
    frame of the signed-in person's pages, and offers a login only to nobody signed in."""
    from starlette.responses import JSONResponse

    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": refusal.reason}, refusal.status)
    heading = HEADINGS.get(refusal.status, "Refused")
    try:
        viewer = inbox.viewer(request)
    except Refusal:  # a request the proxy rules refuse is nobody's
        viewer = None
    return inbox.message(viewer, refusal.status, heading, refusal.reason)


async def health(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("ok")


def _to_login(request: Request) -> Response:
    from starlette.responses import RedirectResponse

    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse("/login?next=" + quote(target, safe=""), 303)


def _fingerprint(parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def _pending(inbox: Inbox) -> list[PendingCall]:
    try:
        return await inbox.calls.pending(limit=inbox.section.list_limit)
    except RPCError as exc:
        raise Refusal(503, f"cannot list the waiting calls: {exc.message}") from None
    except (PayloadKeyError, PayloadStoreError) as exc:
        raise Refusal(500, f"cannot read the waiting calls: {exc}") from None


def pending_version(calls: list[PendingCall]) -> str:
    return _fingerprint(
        sorted(
            (
                call.workflow_id,
                call.approval.request_id if call.approval else None,
                call.approval.approved_by if call.approval else None,
                call.approval.escalated if call.approval else None,
                call.question.request_id if call.question else None,
            )
            for call in calls
        )
    )


async def pending(inbox: Inbox, request: Request) -> Response:
    viewer = inbox.viewer(request)
    if viewer is None:
        return _to_login(request)
    calls = await _pending(inbox)
    now = inbox.now()
    rows = [rendering.listed(call, viewer.identity.name, now) for call in calls]
    query = request.query_params
    filters = {
        "tool": query.get("tool") or "",
        "capability": query.get("capability") or "",
        "sort": "expiring" if query.get("sort") == "expiring" else "newest",
        "mine": query.get("mine") == "1",
    }
    shown = [
        row
        for row in rows
        if (not filters["tool"] or row.tool == filters["tool"])
        and (not filters["capability"] or filters["capability"] in row.capabilities)
        and (not filters["mine"] or row.yours)
    ]
    context = {
        "page": "pending",
        "rows": rendering.sort_calls(shown, str(filters["sort"])),
        "tools": sorted({row.tool for row in rows}),
        "capabilities": sorted({cap for row in rows for cap in row.capabilities}),
        "filters": filters,
        "filtered": bool(filters["tool"] or filters["capability"] or filters["mine"]),
        "watch": "/api/pending",
        "version": pending_version(calls),
    }
    return inbox.page(viewer, "list.html", context)


async def pending_version_api(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import JSONResponse

    if inbox.viewer(request) is None:
        raise Refusal(401, "you are not logged in")
    return JSONResponse({"version": pending_version(await _pending(inbox))})


async def _status(inbox: Inbox, workflow_id: str) -> CallView:
    try:
        return await inbox.calls.status(workflow_id)
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise Refusal(404, f"no call {workflow_id}") from None
        raise Refusal(503, f"cannot read {workflow_id}: {exc.message}") from None
    except (PayloadKeyError, PayloadStoreError) as exc:
        raise Refusal(500, f"cannot read {workflow_id}: {exc}") from None
    except (WorkflowQueryFailedError, ValueError, TypeError):
        raise Refusal(404, f"{workflow_id} is not a tool call") from None


def call_version(view: CallView) -> str:
    state = view.state
    pending, question = state.pending_approval, state.pending_question
    return _fingerprint(
        [
            state.phase.value,
            pending.request_id if pending else None,
            pending.approved_by if pending else None,
            pending.escalated if pending else None,
            question.request_id if question else None,
            state.result.status.value if state.result else None,
        ]
    )


async def call_version_api(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import JSONResponse

    if inbox.viewer(request) is None:
        raise Refusal(401, "you are not logged in")
    view = await _status(inbox, request.path_params["workflow_id"])
    return JSONResponse({"version": call_version(view)})


def _duration_label(seconds: float) -> str:
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} seconds"


def grant_options(pending: ApprovalRequest) -> list[tuple[int, str]]:
    """The standing-grant durations a decision on ``pending`` may choose."""
    if pending.max_grant is None or pending.min_approvals > 1:
        return []
    limit = pending.max_grant.total_seconds()
    seconds = sorted({*(s for s in GRANT_CHOICES if s < limit), int(limit)})
    return [(value, _duration_label(value)) for value in seconds if value > 0]


def _arguments(pending: ApprovalRequest | None) -> str:
    return rendering.pretty(pending.arguments) if pending else ""


async def _run(inbox: Inbox, workflow_id: str, run_id: str) -> CallView:
    """One run of ``workflow_id``: its recorded result once it has ended, else the call as it is.

    Raises:
        Refusal: no such run (404), a run that ended without a call's result (404), Temporal
            unreachable (503).
    """
    handle = inbox.calls.client.get_workflow_handle(workflow_id, run_id=run_id)
    try:
        description = await handle.describe()
        if description.status is WorkflowExecutionStatus.RUNNING:
            return await _status(inbox, workflow_id)
        finished = FinishedCall(workflow_id, run_id, "", description.close_time)
        result = await _result(inbox, finished, asyncio.Semaphore(1))
    except RPCError as exc:
        if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
            raise Refusal(404, f"no run {run_id} of {workflow_id}") from None
        raise Refusal(503, f"cannot read {workflow_id}: {exc.message}") from None
    except WorkflowFailureError:
        result = None
    except (PayloadKeyError, PayloadStoreError) as exc:
        raise Refusal(500, f"cannot read {workflow_id}: {exc}") from None
    if result is None:
        raise Refusal(404, f"run {run_id} of {workflow_id} ended without a call's result")
    return CallView(
        finished_state(result),
        live=False,
        running=False,
        history_events=[],
        parent_id=description.parent_id,
        metadata=metadata_of(await description.memo_value(MEMO_METADATA, None)),
    )


async def call_page(
    inbox: Inbox,
    viewer: Viewer,
    workflow_id: str,
    *,
    run_id: str | None = None,
    notice: str | None = None,
    error: str | None = None,
    editing: bool = False,
    edit_text: str | None = None,
    status: int = 200,
) -> Response:
    """A call's page, with what became of an action (``notice``) or why it failed (``error``);
    with ``run_id``, that run's (a run that has ended never changes, so it is not watched)."""
    view = await (_run(inbox, workflow_id, run_id) if run_id else _status(inbox, workflow_id))
    state = view.state
    pending, result = state.pending_approval, state.result
    decide = pending is not None and rendering.can_decide(viewer.identity.name, pending)
    now = inbox.now()
    settled = run_id is not None and not view.running
    scopes = [(GrantScope.DEPLOYMENT.value, "of any workflow of this deployment")]
    if view.parent_id is not None:
        scopes.insert(0, (GrantScope.PARENT.value, f"made by {view.parent_id}"))
    context = {
        "view": view,
        "state": state,
        "short_id": words.short_id(workflow_id),
        "asked_by": words.asked_by(view.parent_id, view.metadata),
        "why": [words.reason(text) for text in pending.reasons] if pending else [],
        "pending": pending,
        "question": state.pending_question,
        "consent": state.pending_connection,
        "result": result,
        "status": result.status.value if result else state.phase.value,
        "status_text": (result.status.value if result else state.phase.value).replace("_", " "),
        "shown": rendering.previews(pending) if pending else [],
        "arguments": _arguments(pending),
        "decide": decide,
        "stop": view.running and not settled and _may_stop(inbox, viewer, state),
        "editing": editing and decide and view.live,
        "edit_text": edit_text if edit_text is not None else _arguments(pending),
        "grant_options": grant_options(pending) if pending and decide else [],
        "grant_scopes": scopes,
        "decisions": rendering.decisions(result) if result else [],
        "output": rendering.pretty(result.output) if result and result.output is not None else None,
        "events": rendering.events(state.events),
        "age": lambda moment: rendering.age(moment, now),
        "expiry": lambda moment: rendering.expiry(moment, now),
        "notice": notice,
        "error": error,
        "watch": None if settled else "/api/calls/" + quote(workflow_id, safe="/"),
        "version": call_version(view),
    }
    return inbox.page(viewer, "call.html", context, status=status)


def _may_stop(inbox: Inbox, viewer: Viewer, state: CallState) -> bool:
    allowed = inbox.stoppers(state)
    return state.result is None and (allowed is None or viewer.identity.name in allowed)


async def call(inbox: Inbox, request: Request) -> Response:
    viewer = inbox.viewer(request)
    if viewer is None:
        return _to_login(request)
    query = request.query_params
    return await call_page(
        inbox,
        viewer,
        request.path_params["workflow_id"],
        run_id=query.get("run") or None,
        notice=NOTICES.get(query.get("done") or ""),
        editing=query.get("edit") == "1",
    )


@dataclass(frozen=True)
class RecentRow:
    workflow_id: str
    run_id: str
    short_id: str
    tool: str
    closed: str
    status: str
    decisions: list[rendering.Decision]


async def _result(
    inbox: Inbox, call: FinishedCall, limit: asyncio.Semaphore
) -> ToolCallResult | None:
    """The call's result, or ``None`` when its history holds something else under the workflow
    type's name (a workflow of another shape that took the name), or a result in an encoding this
    inbox's converter does not know (a client with a codec of its own started it): it is left out
    of the page."""
    key = f"{call.workflow_id}\x00{call.run_id}"
    cached = inbox.results.get(key)
    if cached is not None:
        return cached
    async with limit:
        try:
            result = await inbox.calls.result_of(call)
        except ValueError as exc:  # pydantic's ValidationError included
            log.warning("recent: %s: its result is not a call's result: %s", call.workflow_id, exc)
            return None
        except KeyError as exc:  # the SDK's converter: "Unknown payload encoding ..."
            log.warning("recent: %s: its result cannot be decoded here: %s", call.workflow_id, exc)
            return None
    inbox.remember_result(key, result)
    return result


async def recent(inbox: Inbox, request: Request) -> Response:
    viewer = inbox.viewer(request)
    if viewer is None:
        return _to_login(request)
    try:
        finished = await inbox.calls.finished(limit=inbox.section.recent_limit)
        limit = asyncio.Semaphore(RESULT_FETCHES)
        results = await asyncio.gather(*(_result(inbox, call, limit) for call in finished))
    except RPCError as exc:
        raise Refusal(503, f"cannot list the finished calls: {exc.message}") from None
    except (PayloadKeyError, PayloadStoreError) as exc:
        raise Refusal(500, f"cannot read the finished calls: {exc}") from None
    rows = []
    for call, result in zip(finished, results, strict=True):
        if result is None:
            continue
        decided = rendering.decisions(result)
        if decided:
            rows.append(
                RecentRow(
                    workflow_id=call.workflow_id,
                    run_id=call.run_id,
                    short_id=words.short_id(call.workflow_id),
                    tool=result.tool,
                    closed=when(call.closed_at or result.finished_at),
                    status=result.status.value,
                    decisions=decided,
                )
            )
    return inbox.page(viewer, "recent.html", {"page": "recent", "rows": rows})
