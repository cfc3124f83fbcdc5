"""Following a call while an MCP request waits for it: progress, and asking through the client.

The follower reads the call's state (``ToolCallClient.status``) about once a second, then every
``SLOW_POLL_SECONDS`` once a phase has lasted a minute; while the tool runs, also what it
published since the last look (its progress stream), whose latest line or count goes in the
message. It sends a progress notification when the message changes and every
``KEEPALIVE_SECONDS`` while it lasts (clients that reset their request timeout on progress keep
waiting), and only when the client asked for progress. When the
call waits for the user's answer, or for an approval the MCP user may give, it asks through the
client's elicitation (``toolcalls.worker.mcp.elicit``): on the handshake protocols as a request to
the client, in a task of its own so progress goes on while the form is open, a form whose request
was settled elsewhere (the inbox, the CLI) being withdrawn; on 2026-07-28, which lets no server send
requests, by ending the wait with the form as the request's ``input_required`` result
(``toolcalls.worker.mcp.rounds``). A request that asked for no progress, from a client that takes no
forms, is not followed at all.

Nothing here decides the call: an answer or a decision goes to the workflow through
``ToolCallClient``, whose update validator has the last word.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolcalls.worker.mcp.elicit import (
    Form,
    approval_verdict,
    may_decide,
    question_answer,
    takes_forms,
)
from toolcalls.worker.mcp.front import Front
from toolcalls.worker.mcp.handover import takes_links
from toolcalls.workflows.models.approval import ApprovalDecision
from toolcalls.workflows.models.call import Phase
from toolcalls.workflows.models.progress import ProgressItem, ProgressKind
from toolcalls.workflows.reach.client import CallView, Delivery, NoPendingRequest, Outcome
from toolcalls.workflows.reach.follow import page_of

POLL_SECONDS = 1.0
SLOW_POLL_SECONDS = 5.0
SLOW_AFTER_SECONDS = 60.0
"""A phase that lasted this long is read every ``SLOW_POLL_SECONDS``."""
KEEPALIVE_SECONDS = 15.0
OUTPUT_PAGES = 5
"""Pages of the call's progress stream read at one look; the rest waits for the next."""
OUTPUT_CHARS = 200
"""Characters of an output line shown in a progress message."""

log = logging.getLogger("toolcalls.mcp")


def progress_text(front: Front, view: CallView) -> str:
    """What the user reads while the call waits: its phase and where to act on it."""
    state = view.state
    if state.result is not None:
        return f"{state.tool}: {state.result.status.value}"
    workflow_id = state.workflow_id
    approval = state.pending_approval
    if state.phase is Phase.AWAITING_APPROVAL and approval is not None:
        who = ", ".join(approval.approvers_shown or approval.approvers or []) or "anyone"
        text = f"waiting for approval by {who}"
        if approval.min_approvals > 1:
            text += f" ({len(approval.approved_by)} of {approval.min_approvals} approved)"
        text += f"; decide at {front.decide_at(workflow_id)} or: toolcalls approve {workflow_id}"
    elif state.phase is Phase.AWAITING_ANSWER:
        text = (
            f"waiting for the user's answer; answer at {front.decide_at(workflow_id)} or: "
            f"toolcalls answer {workflow_id} TEXT"
        )
    elif state.phase is Phase.AWAITING_CONNECTION and state.pending_connection is not None:
        consent = state.pending_connection
        text = (
            f"waiting for {consent.principal} to connect a {consent.provider} account: "
            f"{consent.url}"
        )
    elif state.phase is Phase.PREPARING:
        text = f"{state.tool}: preparing the preview for approval"
    else:
        text = f"{state.tool}: {state.phase.value.replace('_', ' ')}"
    if view.running and not view.live:
        text += "; no toolcalls worker is serving it"
    return text


def output_text(item: ProgressItem) -> str:
    """A progress item as a progress message shows it: a line of output, or a count."""
    if item.kind in (ProgressKind.STDOUT, ProgressKind.STDERR, ProgressKind.NOTE):
        return item.text[:OUTPUT_CHARS]
    total = f" of {item.total}" if item.total is not None else ""
    return f"{item.done}{total} {item.kind.value}"


class Follower:
    """Follows one call for one ``tools/call`` request (see the module docstring)."""

    def __init__(self, front: Front, ctx: Any, workflow_id: str, asked: Iterable[str] = ()) -> None:
        self.front = front
        self.ctx = ctx
        self.workflow_id = workflow_id
        forms = takes_forms(ctx.session)
        self.sends = forms and bool(ctx.session.can_send_request)
        """Forms go to the client as elicitation requests (the handshake protocols)."""
        self.returns = forms and not self.sends and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        """Forms go back as the request's ``input_required`` result (2026-07-28)."""
        self.wants_progress = bool(ctx.meta and ctx.meta.get("progress_token") is not None)
        self.progress = 0
        self.offset = 0
        """Where the next look at the call's progress stream starts."""
        self.latest: str | None = None
        """The latest output line or count shown in a progress message."""
        self.asked: set[str] = set(asked)
        """Request ids (approval or question) asked about once already: never asked again."""
        self.open: dict[str, anyio.CancelScope] = {}
        self.needed: Form | None = None
        """The form to return as ``input_required``; following ends once it is set."""

    async def run(self) -> None:
        """Follow until cancelled, or until a form must go back as the request's result."""
        if not (self.wants_progress or self.sends or self.returns):
            return  # nothing to tell the client, nothing to ask it: no status reads
        last_text: str | None = None
        last_sent = phase_since = 0.0
        last_phase: Phase | None = None
        async with anyio.create_task_group() as forms:
            while self.needed is None:
                view = await self._view()
                now = time.monotonic()
                if view is not None:
                    if view.state.phase is not last_phase:
                        last_phase, phase_since = view.state.phase, now
                    text = progress_text(self.front, view)
                    if view.state.phase is Phase.RUNNING and self.wants_progress:
                        latest = await self._output()
                        if latest:
                            text = f"{text}: {latest}"
                    if text != last_text or now - last_sent >= KEEPALIVE_SECONDS:
                        await self.report(text)
                        last_text, last_sent = text, now
                    self._ask(view, forms)
                if self.needed is None:
                    slow = now - phase_since >= SLOW_AFTER_SECONDS
                    await anyio.sleep(SLOW_POLL_SECONDS if slow else POLL_SECONDS)

    async def _output(self) -> str | None:
        """The latest of what the tool published since the last look (``progress.md``): a line
        of output, or a count; ``None`` when nothing new came."""
        latest: ProgressItem | None = None
        try:
            for _ in range(OUTPUT_PAGES):
                page = await page_of(self.front.calls.client, self.workflow_id, self.offset)
                if page.items:
                    latest = page.items[-1]
                self.offset = page.next_offset
                if page.ended or not page.items:
                    break
        except Exception as exc:  # a passing Temporal error: the next look tries again
            log.debug("progress of %s: %s", self.workflow_id, exc)
        if latest is not None:
            self.latest = output_text(latest)
        return self.latest

    async def _view(self) -> CallView | None:
        try:
            return await self.front.calls.status(self.workflow_id)
        except Exception as exc:  # a passing Temporal error: the wait goes on
            log.debug("status of %s: %s", self.workflow_id, exc)
            return None

    async def report(self, text: str) -> None:
        """Send a progress notification, if the client asked for progress."""
        self.progress += 1
        try:
            await self.ctx.session.report_progress(self.progress, None, text)
        except Exception as exc:  # the client went away: the call goes on in Temporal
            log.debug("progress for %s not sent: %s", self.workflow_id, exc)

    def _ask(self, view: CallView, forms: anyio.abc.TaskGroup) -> None:
        state = view.state
        waiting = {
            pending.request_id
            for pending in (state.pending_approval, state.pending_question)
            if pending is not None
        }
        for request_id in [rid for rid in self.open if rid not in waiting]:
            # Settled elsewhere (or expired): withdraw the form.
            self.open.pop(request_id).cancel()
        if not (self.sends or self.returns) or not view.running:
            return
        question, approval = state.pending_question, state.pending_approval
        form = None
        if question is not None and question.request_id not in self.asked:
            form = Form.of_question(question)
        elif (
            approval is not None
            and self.front.approve_via_elicitation
            and approval.request_id not in self.asked
            and may_decide(self.front.identity, approval)
        ):
            form = Form.of_approval(approval)
        elif (
            approval is not None
            and self.front.inbox_url is not None
            and approval.request_id not in self.asked
            and takes_links(self.ctx.session)
        ):
            form = Form.of_inbox(approval, self.front.decide_at(state.workflow_id))
        if form is None:
            return
        self.asked.add(form.request_id)
        if self.returns:
            self.needed = form
            return
        scope = anyio.CancelScope()
        self.open[form.request_id] = scope

        async def asking() -> None:
            with scope:
                try:
                    result: types.ElicitResult = await self._elicit(form)
                    note = await deliver(self.front, self.workflow_id, form, result)
                    if note:
                        await self.report(note)
                except Exception as exc:  # the client refused the form or went away
                    log.info("%s: elicitation failed: %s", self.workflow_id, exc)
            self.open.pop(form.request_id, None)

        forms.start_soon(asking)

    async def _elicit(self, form: Form) -> types.ElicitResult:
        session, related = self.ctx.session, self.ctx.request_id
        result: types.ElicitResult
        if form.url is not None:
            result = await session.elicit_url(form.message, form.url, form.request_id, related)
        else:
            result = await session.elicit_form(form.message, form.schema, related)
        return result


async def deliver(
    front: Front, workflow_id: str, form: Form, result: types.ElicitResult
) -> str | None:
    """Give the call what the MCP user answered on ``form``; a note for the progress, if any."""
    if form.kind == "inbox":  # a link is never a decision, whatever the client answered
        return f"the link to the approval inbox was answered {result.action!r}; the call waits"
    try:
        if form.kind == "question":
            text = question_answer(result)
            outcome = await front.calls.answer(workflow_id, text, responder=front.identity)
            return _note("answer", outcome)
        verdict = approval_verdict(result)
        if verdict.approved is None:
            return "the approval form was dismissed; the call still waits"
        assert form.digest is not None
        decision = ApprovalDecision(
            request_id=form.request_id,
            digest=form.digest,
            approved=verdict.approved,
            approver=front.identity,
            reason=verdict.reason,
        )
        outcome = await front.calls.decide(workflow_id, decision)
        return _note("approval" if verdict.approved else "denial", outcome)
    except NoPendingRequest as exc:
        return f"nothing was delivered: {exc}"


def _note(what: str, outcome: Outcome) -> str | None:
    if outcome.delivery is Delivery.REJECTED:
        return f"the {what} was not accepted: {outcome.reason}"
    if outcome.delivery is Delivery.QUEUED:
        return f"the {what} is queued until a toolcalls worker serves the call"
    return None
