"""``POST /slack/interactions``: Slack's interaction payloads, served by the inbox's process.

A request is taken only once ``RequestVerifier`` has checked it (signature, five-minute window,
no replay) and it comes from the ``[slack] team_id`` workspace when one is set. The Slack user is
then mapped to an approver name by ``[slack.users]``: an unmapped user is told so, only them, and
nothing is decided. A click is answered at once (Slack waits three seconds at most) and decided
beside the answer, through ``ToolCallClient.decide``: the same validated update as every other
front, so the approver rules, the two-person rule, the digest and the expiry hold. The message is
then updated with what became of the decision and who took it. A click on a message whose request
is no longer the pending one (decided, ended, or replaced by an edit) decides nothing: the
message is updated with the call's current state and the clicker is told why.

"Reply instead" opens a form (a modal); its submission is a response, the decision that answers
the call in place of the tool.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from pydantic import ValidationError
from temporalio.service import RPCError

from toolcalls.worker.chat.slack.api import SlackAPI, SlackError
from toolcalls.worker.chat.slack.blocks import (
    APPROVE,
    DENY,
    REPLY,
    REPLY_BLOCK,
    CallRef,
    context,
    escape,
    read_reply,
    reply_view,
    request_message,
)
from toolcalls.worker.chat.slack.settings import SlackSection
from toolcalls.worker.chat.slack.verify import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    Refused,
    RequestVerifier,
)
from toolcalls.worker.render import may_decide
from toolcalls.workflows.models.approval import ApprovalDecision, ApprovalRequest
from toolcalls.workflows.models.views import CallView, Delivery, NoPendingRequest
from toolcalls.workflows.reach.client import ToolCallClient

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

MAX_BODY_BYTES = 1_048_576
"""An interaction past this is refused (a message of 50 full sections is about 200 KB)."""
PATH = "/slack/interactions"

log = logging.getLogger("toolcalls.slack")


@dataclass(frozen=True)
class Click:
    """One person's decision from Slack: who, on which request, from which message."""

    ref: CallRef
    name: str
    user_id: str
    channel: str
    ts: str
    shown: list[dict[str, Any]] = field(default_factory=list)
    """The message's blocks as Slack sent them back (none from the reply form)."""


class SlackInteractions:
    """The interactions endpoint of one ``[slack]`` app."""

    def __init__(
        self,
        section: SlackSection,
        api: SlackAPI,
        calls: ToolCallClient,
        verifier: RequestVerifier,
        link: Callable[[str], str],
    ) -> None:
        """``link``: the inbox page of a call, by workflow id (``[notifications] link``)."""
        self.section = section
        self.api = api
        self.calls = calls
        self.verifier = verifier
        self.link = link
        self._tasks: set[asyncio.Task[None]] = set()

    async def idle(self) -> None:
        """Wait until every decision taken so far is done (tests, and a clean stop)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    async def endpoint(self, request: Request) -> Response:
        from starlette.responses import JSONResponse, PlainTextResponse, Response

        try:
            payload = await self._payload(request)
            if payload.get("type") == "block_actions":
                self._clicked(payload)
            elif payload.get("type") == "view_submission":
                errors = self._submitted(payload)
                if errors is not None:
                    return JSONResponse({"response_action": "errors", "errors": errors})
        except Refused as refusal:
            log.warning("refused a Slack request: %s", refusal.message)
            return PlainTextResponse(refusal.message, status_code=refusal.status)
        return Response(status_code=200)

    async def _payload(self, request: Request) -> dict[str, Any]:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise Refused(413, f"slack: a request is at most {MAX_BODY_BYTES} bytes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise Refused(413, f"slack: a request is at most {MAX_BODY_BYTES} bytes")
        headers = request.headers
        self.verifier.verify(
            headers.get(TIMESTAMP_HEADER), headers.get(SIGNATURE_HEADER), bytes(body)
        )
        try:
            [text] = parse_qs(body.decode(), strict_parsing=True)["payload"]
            payload = json.loads(text)
        except (ValueError, KeyError, UnicodeDecodeError):
            raise Refused(400, "slack: the body is not a form with one payload") from None
        if not isinstance(payload, dict):
            raise Refused(400, "slack: the payload is not a JSON object")
        team = _get(payload, "team", "id") or _get(payload, "user", "team_id")
        if self.section.team_id is not None and team != self.section.team_id:
            raise Refused(403, f"slack: the request is not from workspace {self.section.team_id}")
        return payload

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(_logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _clicked(self, payload: dict[str, Any]) -> None:
        actions = payload.get("actions")
        action = actions[0] if isinstance(actions, list) and actions else {}
        action_id = action.get("action_id") if isinstance(action, dict) else None
        if action_id not in (APPROVE, DENY, REPLY):
            return  # another app's element, or nothing to do
        user_id = str(_get(payload, "user", "id") or "")
        channel = str(_get(payload, "container", "channel_id") or _get(payload, "channel", "id"))
        ts = str(_get(payload, "container", "message_ts") or _get(payload, "message", "ts"))
        try:
            ref = CallRef.decode(action.get("value"))
        except ValueError as exc:
            raise Refused(400, f"slack: {exc}") from None
        name = self.section.approver(user_id)
        if name is None:
            self._spawn(self._tell(channel, user_id, _unmapped(user_id)))
            return
        blocks = _get(payload, "message", "blocks")
        shown = blocks if isinstance(blocks, list) else []
        click = Click(ref, name, user_id, channel, ts, shown)
        if action_id == REPLY:
            self._spawn(self._open_reply(click, str(payload.get("trigger_id", ""))))
        else:
            self._spawn(self._decide(click, approved=action_id == APPROVE))

    def _submitted(self, payload: dict[str, Any]) -> dict[str, str] | None:
        """Take a reply form; the form's errors to show, or ``None`` to close it."""
        try:
            form = read_reply(payload.get("view"))
        except ValueError:
            return None  # another app's view
        user_id = str(_get(payload, "user", "id") or "")
        name = self.section.approver(user_id)
        if name is None:
            return {REPLY_BLOCK: _unmapped(user_id)}
        if not form.text.strip():
            return {REPLY_BLOCK: "Write the reply the model reads, or cancel."}
        click = Click(form.ref, name, user_id, form.channel, form.ts)
        self._spawn(self._decide(click, approved=False, response=form.text))
        return None

    async def _tell(self, channel: str, user_id: str, text: str) -> None:
        await self.api.post_ephemeral(channel, user_id, text)

    async def _pending(self, click: Click) -> ApprovalRequest | None:
        """The request the click may decide; ``None`` once the message is updated as stale."""
        try:
            pending = await self.calls.pending_approval(click.ref.workflow_id)
        except (NoPendingRequest, RPCError):
            pending = None
        if pending is not None and (pending.request_id, pending.digest) == (
            click.ref.request_id,
            click.ref.digest,
        ):
            return pending
        await self._stale(click, pending)
        return None

    async def _open_reply(self, click: Click, trigger_id: str) -> None:
        pending = await self._pending(click)
        if pending is None or not await self._may_decide(click, pending):
            return
        view = reply_view(click.ref, click.channel, click.ts, pending.tool)
        await self.api.open_view(trigger_id, view)

    async def _may_decide(self, click: Click, pending: ApprovalRequest) -> bool:
        if pending.approvers is not None and click.name not in pending.approvers:
            why = f"{click.name} may not decide this call: it needs {may_decide(pending)}"
        elif click.name in pending.approved_by:
            why = f"{click.name} already approved this call: it needs another approver"
        else:
            return True
        log.warning("refused a Slack decision by %s on %s", click.name, click.ref.workflow_id)
        await self._tell(click.channel, click.user_id, f"Nothing was done: {why}.")
        return False

    async def _decide(self, click: Click, *, approved: bool, response: str | None = None) -> None:
        pending = await self._pending(click)
        if pending is None or not await self._may_decide(click, pending):
            return
        try:
            decision = ApprovalDecision(
                request_id=pending.request_id,
                digest=pending.digest,
                approved=approved,
                approver=click.name,
                response=response,
            )
        except ValidationError as exc:
            reason = exc.errors(include_url=False)[0]["msg"]
            await self._tell(click.channel, click.user_id, f"Nothing was done: {reason}.")
            return
        outcome = await self.calls.decide(click.ref.workflow_id, decision)
        verb = "approved" if approved else "answered" if response is not None else "denied"
        log.info(
            "%s %s %s from Slack (%s)",
            click.name,
            verb,
            click.ref.workflow_id,
            outcome.delivery.value,
        )
        if outcome.delivery is Delivery.REJECTED:
            text = f"Nothing was done: the call refused the decision: {outcome.reason}."
            await self._tell(click.channel, click.user_id, text)
            return
        approvals = len(pending.approved_by) + 1
        waiting = approved and approvals < pending.min_approvals
        status = {
            "approved": f"Approved by {click.name}",
            "denied": f"Denied by {click.name}",
            "answered": f"Answered by {click.name} in place of the tool (it did not run)",
        }[verb]
        if waiting:
            status += f" ({approvals} of {pending.min_approvals} approvals)"
            pending = pending.model_copy(update={"approved_by": [*pending.approved_by, click.name]})
        if outcome.delivery is Delivery.QUEUED:
            status += "; queued until a worker serves the call"
        await self._update(click, pending, status, decidable=waiting)

    async def _update(
        self, click: Click, request: ApprovalRequest, status: str, *, decidable: bool
    ) -> None:
        link = self.link(request.workflow_id)
        text, blocks = request_message(request, link, status=status, decidable=decidable)
        await self.api.update_message(click.channel, click.ts, text, blocks)

    async def _stale(self, click: Click, pending: ApprovalRequest | None) -> None:
        """Answer a click on a request that is no longer the pending one with the call's state."""
        if pending is not None:
            status = "The call was edited since this message was posted: this is its request now"
            await self._update(click, pending, status, decidable=True)
            why = "the call was edited since the message was posted: review it again"
        else:
            try:
                why = _state(await self.calls.status(click.ref.workflow_id))
            except RPCError:
                why = "no call has this id any more"
            kept = [block for block in click.shown if block.get("type") != "actions"]
            blocks = [*kept, context(escape(why))]
            await self.api.update_message(click.channel, click.ts, why, blocks)
        await self._tell(click.channel, click.user_id, f"Nothing was done: {why}.")


def _state(view: CallView) -> str:
    """A call that no longer waits for an approval, in one line."""
    result = view.state.result
    if result is None:
        return f"the call no longer waits for an approval (it is {view.state.phase.value})"
    text = f"the call has ended: {result.status.value}"
    if result.error is not None:
        text += f" ({result.error.code.value})"
    if result.approval is not None and result.approval.approver:
        text += f", decided by {result.approval.approver}"
    return text


def _unmapped(user_id: str) -> str:
    return (
        f"Nothing was done: your Slack user ({user_id}) is not an approver of this deployment; "
        "an operator maps Slack users to approvers in [slack.users]."
    )


def _get(payload: dict[str, Any], key: str, inner: str) -> Any:
    value = payload.get(key)
    return value.get(inner) if isinstance(value, dict) else None


async def _logged(work: Coroutine[Any, Any, None]) -> None:
    """Run a decision beside the answer to Slack; what fails is logged (Slack got its answer)."""
    try:
        await work
    except SlackError as exc:
        log.warning("%s", exc)
    except Exception:
        log.exception("a Slack interaction failed")
