"""The actions of a call's page: approve, approve and remember, deny, reply instead (a response
in place of the tool), edit, answer, decline, and stop (cancel a waiting or running call).

Each one is bound to the request the page showed (its id and digest), names the signed-in user as
the one who decides (never a form field), and is refused with 403 before it reaches the call when
the approver rules leave that user out. What the workflow refuses comes back with its reason, on
the call's page.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from toolcalls.worker.inbox import rendering
from toolcalls.worker.inbox.auth import Refusal
from toolcalls.worker.inbox.base import Inbox, Viewer, call_url, form_text
from toolcalls.worker.inbox.pages import call_page
from toolcalls.worker.render import may_decide
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRequest,
    GrantScope,
    GrantTerms,
)
from toolcalls.workflows.models.question import (
    MAX_ANSWER_CHARS,
)
from toolcalls.workflows.reach.client import CallNotFound, Delivery, NoPendingRequest

if TYPE_CHECKING:
    from starlette.datastructures import FormData
    from starlette.requests import Request
    from starlette.responses import Response

log = logging.getLogger("toolcalls.inbox")


@dataclass(frozen=True)
class _Action:
    """One POST of a call's page: who sent it, about which call, with which form."""

    inbox: Inbox
    viewer: Viewer
    workflow_id: str
    form: FormData

    @property
    def name(self) -> str:
        return self.viewer.identity.name

    def done(self, what: str) -> Response:
        from starlette.responses import RedirectResponse

        return RedirectResponse(f"{call_url(self.workflow_id)}?done={what}", 303)

    async def again(self, error: str, status: int, **page: Any) -> Response:
        """The call's page with the reason the action did not happen."""
        return await call_page(
            self.inbox,
            self.viewer,
            self.workflow_id,
            error=error,
            status=status,
            **page,
        )

    async def approval(self) -> ApprovalRequest:
        """The pending request the form was for, if it is still pending and ours to decide.

        Raises:
            NoPendingRequest: it is not pending any more.
            Refusal: the approver rules do not let this user decide it (403).
        """
        pending = await self.inbox.calls.pending_approval(
            self.workflow_id, request_id=form_text(self.form, "request_id")
        )
        if not rendering.can_decide(self.name, pending):
            log.warning("refused a decision by %s on %s", self.name, self.workflow_id)
            who = may_decide(pending)
            raise Refusal(403, f"{self.name} may not decide this call: it needs {who}")
        return pending


async def act(inbox: Inbox, request: Request) -> Response:
    """A form on a call's page: approve, remember, deny, edit, answer or decline."""
    form = await inbox.form(request)
    viewer = inbox.check_csrf(inbox.viewer(request), form)
    action = _Action(inbox, viewer, request.path_params["workflow_id"], form)
    verb = form_text(form, "action")
    handler = _ACTIONS.get(verb)
    if handler is None:
        raise Refusal(400, f"unknown action {verb!r}")
    try:
        return await handler(action)
    except NoPendingRequest as exc:
        return await action.again(f"Nothing was done: {_reason(exc)}.", 409)


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text.split(": ", 1)[1] if ": " in text else text


async def _decide(
    action: _Action, *, approved: bool, remember: bool = False, respond: bool = False
) -> Response:
    pending = await action.approval()
    form = action.form
    if form_text(form, "digest") != pending.digest:
        return await action.again("The call changed since the page was loaded: review it.", 409)
    reason = form_text(form, "reason").strip() or None
    response = form_text(form, "response") if respond else None
    if response is not None and not response.strip():
        return await action.again("Write the reply the model reads, or deny the call.", 400)
    try:
        terms = _grant_terms(form) if remember else None
        decision = ApprovalDecision(
            request_id=pending.request_id,
            digest=pending.digest,
            approved=approved,
            approver=action.name,
            reason=reason,
            remember=terms,
            response=response,
        )
    except (ValidationError, ValueError) as exc:
        return await action.again(f"Nothing was done: {_first_error(exc)}.", 400)
    outcome = await action.inbox.calls.decide(action.workflow_id, decision)
    verb = "approved" if approved else "responded" if respond else "denied"
    log.info("%s %s %s (%s)", action.name, verb, action.workflow_id, outcome.delivery.value)
    if outcome.delivery is Delivery.REJECTED:
        return await action.again(f"The call refused the decision: {outcome.reason}", 409)
    if outcome.delivery is Delivery.QUEUED:
        return action.done("queued")
    if approved and len(pending.approved_by) + 1 < pending.min_approvals:
        return action.done("recorded")
    return action.done("remembered" if remember else verb)


def _grant_terms(form: FormData) -> GrantTerms:
    seconds = form_text(form, "duration")
    if not seconds.isdigit() or int(seconds) <= 0:
        raise ValueError("choose how long the grant lasts")
    return GrantTerms(
        duration=timedelta(seconds=int(seconds)),
        scope=GrantScope(form_text(form, "scope") or GrantScope.PARENT.value),
        any_arguments=form_text(form, "any_arguments") == "1",
    )


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return str(exc)


async def _approve(action: _Action) -> Response:
    return await _decide(action, approved=True)


async def _remember(action: _Action) -> Response:
    return await _decide(action, approved=True, remember=True)


async def _deny(action: _Action) -> Response:
    return await _decide(action, approved=False)


async def _respond(action: _Action) -> Response:
    return await _decide(action, approved=False, respond=True)


async def _edit(action: _Action) -> Response:
    await action.approval()
    text = form_text(action.form, "arguments")
    try:
        arguments = json.loads(text)
        if not isinstance(arguments, dict):
            raise ValueError("expected a JSON object")
    except ValueError as exc:
        return await action.again(
            f"The arguments are not a JSON object: {exc}.", 400, editing=True, edit_text=text
        )
    try:
        await action.inbox.calls.propose_edit(
            action.workflow_id,
            arguments,
            editor=action.name,
            request_id=form_text(action.form, "request_id"),
        )
    except NoPendingRequest as exc:
        return await action.again(
            f"The call refused the edit: {_reason(exc).removeprefix('edit refused: ')}",
            409,
            editing=True,
            edit_text=text,
        )
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        return await action.again(
            "No worker answered: editing needs a worker serving the call.",
            503,
            editing=True,
            edit_text=text,
        )
    log.info("%s edited %s", action.name, action.workflow_id)
    return action.done("edited")


async def _answer(action: _Action, *, decline: bool = False) -> Response:
    text = None if decline else form_text(action.form, "answer")
    if text is not None and not text.strip():
        return await action.again("Write an answer, pick an option, or decline.", 400)
    if text is not None and len(text) > MAX_ANSWER_CHARS:
        return await action.again(f"An answer is at most {MAX_ANSWER_CHARS} characters.", 400)
    outcome = await action.inbox.calls.answer(
        action.workflow_id,
        text,
        responder=action.name,
        request_id=form_text(action.form, "request_id"),
    )
    verb = "declined" if decline else "answered"
    log.info("%s %s %s (%s)", action.name, verb, action.workflow_id, outcome.delivery.value)
    if outcome.delivery is Delivery.REJECTED:
        return await action.again(f"The call refused the answer: {outcome.reason}", 409)
    return action.done("queued" if outcome.delivery is Delivery.QUEUED else verb)


async def _decline(action: _Action) -> Response:
    return await _answer(action, decline=True)


async def _stop(action: _Action) -> Response:
    """Stop the call (``ToolCallClient.cancel``), for a user its approver rules allow; the
    reason names who stopped it."""
    view = await action.inbox.calls.status(action.workflow_id)
    allowed = action.inbox.stoppers(view.state)
    if allowed is not None and action.name not in allowed:
        log.warning("refused a stop by %s on %s", action.name, action.workflow_id)
        who = ", ".join(allowed) or "no one"
        raise Refusal(403, f"{action.name} may not stop this call: it needs {who}")
    if not view.running:
        return await action.again("Nothing was done: the call has ended.", 409)
    reason = form_text(action.form, "reason").strip()
    said = f"stopped by {action.name} in the inbox" + (f": {reason}" if reason else "")
    try:
        stopped = await action.inbox.calls.cancel(action.workflow_id, reason=said)
    except ValueError as exc:
        return await action.again(f"Nothing was done: {exc}.", 400)
    except CallNotFound as exc:
        return await action.again(f"Nothing was done: {_reason(exc)}.", 409)
    log.info("%s stopped %s (requested: %s)", action.name, action.workflow_id, stopped.requested)
    if not stopped.requested:
        return await action.again(f"Nothing was done: the call already ended {stopped.ended}.", 409)
    return action.done("stopped")


_ACTIONS = {
    "approve": _approve,
    "remember": _remember,
    "deny": _deny,
    "respond": _respond,
    "edit": _edit,
    "answer": _answer,
    "decline": _decline,
    "stop": _stop,
}
