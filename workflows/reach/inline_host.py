"""``InlineHost``: the parent workflow's side of its inline calls.

One per workflow run, whatever number of ``ToolCalls`` make inline calls in it: the first inline
call registers the ``toolcalls.inline.*`` handlers, and later ones find the host through them (the
registered update handler is one of its methods), so nothing is kept outside the workflow. Each
handler finds the call by the call id its payload carries and hands the rest to that call's own
``ToolCallWorkflow`` handler, validator included: a decision is checked exactly as a child checks
it. A signal naming no call of this workflow is logged and dropped.

While calls wait for a human, the host keeps the parent's memo (``inline_pending``: one
``InlinePending`` per call, at most ``MAX_LISTED`` of them, the requests within
``MAX_MEMO_BYTES``) and its ``ToolCallsWaiting`` search attribute (how many wait) up to date, one
upsert of each per change; a call that never waits writes neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from temporalio import workflow

from toolcalls.workflows.call.inline import InlineCall
from toolcalls.workflows.models.approval import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    EditProposal,
)
from toolcalls.workflows.models.call import (
    SEARCH_INLINE_WAITING,
    CallState,
)
from toolcalls.workflows.models.inline import (
    INLINE_ANSWER,
    INLINE_ANSWER_SIGNAL,
    INLINE_APPROVE,
    INLINE_DECIDE,
    INLINE_DENY,
    INLINE_EDIT,
    INLINE_STATUS,
    MEMO_INLINE_PENDING,
    InlineAnswer,
    InlineDecision,
    InlineEdit,
    InlinePending,
)
from toolcalls.workflows.models.limits import encoded_size
from toolcalls.workflows.models.question import (
    AskUserOutput,
    UserAnswer,
)

MAX_LISTED = 50
"""Inline calls listed in the memo at most; ``ToolCallsWaiting`` counts every one."""
MAX_MEMO_BYTES = 256 * 1024
"""What the listed requests may take of the memo together (Temporal warns above 128 KiB per memo
and refuses 2 MiB); a request that does not fit is listed without its body (``omitted``)."""
_M = TypeVar("_M", bound=BaseModel)
_R = TypeVar("_R")
_Update = Callable[[Any], Awaitable[_R]]


class InlineHost:
    """The inline calls of this workflow run, their handlers and what the parent publishes."""

    @classmethod
    def current(cls) -> InlineHost:
        """This workflow run's host, made (and its handlers registered) on first use."""
        handler = workflow.get_update_handler(INLINE_DECIDE)
        host = getattr(handler, "__self__", None)
        if isinstance(host, InlineHost):
            return host
        host = cls()
        host._register()
        return host

    def __init__(self) -> None:
        self._calls: dict[str, InlineCall] = {}
        self._published: list[InlinePending] = []
        self._counted = 0

    def has(self, call_id: str) -> bool:
        return call_id in self._calls

    def add(self, call: InlineCall) -> None:
        self._calls[call.call_id] = call

    def remove(self, call: InlineCall) -> None:
        """Forget a call that went to a child workflow: it is reached there."""
        if self._calls.get(call.call_id) is call:
            del self._calls[call.call_id]
        self.changed()

    def changed(self) -> None:
        """Publish what the calls wait for, if that changed."""
        waiting = [p for call in self._calls.values() if (p := call.pending()) is not None]
        listed = _bounded(waiting)
        if listed != self._published:
            self._published = listed
            workflow.upsert_memo({MEMO_INLINE_PENDING: listed or None})
        if len(waiting) != self._counted:
            self._counted = len(waiting)
            workflow.upsert_search_attributes([SEARCH_INLINE_WAITING.value_set(len(waiting))])

    def _register(self) -> None:
        workflow.set_update_handler(INLINE_DECIDE, self._decide, validator=self._validate_decide)
        workflow.set_update_handler(INLINE_EDIT, self._edit, validator=self._validate_edit)
        workflow.set_update_handler(INLINE_ANSWER, self._answer, validator=self._validate_answer)
        workflow.set_signal_handler(INLINE_APPROVE, self._approve)
        workflow.set_signal_handler(INLINE_DENY, self._deny)
        workflow.set_signal_handler(INLINE_ANSWER_SIGNAL, self._answer_signal)
        workflow.set_query_handler(INLINE_STATUS, self._status)

    def _call(self, call_id: str) -> InlineCall:
        call = self._calls.get(call_id)
        if call is None:
            raise ValueError(f"this workflow has made no inline call {call_id[:200]!r}")
        return call

    # Updates: the call's own validator, then its own handler ----------------------------------

    def _validate_decide(self, decision: InlineDecision) -> None:
        self._call(decision.call_id)._validate_decide(_without_call_id(decision, ApprovalDecision))

    async def _decide(self, decision: InlineDecision) -> ApprovalRecord:
        # The SDK's decorators hide the handlers' own signatures from the type checker.
        handler = cast(_Update[ApprovalRecord], self._call(decision.call_id).decide)
        return await handler(_without_call_id(decision, ApprovalDecision))

    def _validate_edit(self, proposal: InlineEdit) -> None:
        self._call(proposal.call_id)._validate_edit(_without_call_id(proposal, EditProposal))

    async def _edit(self, proposal: InlineEdit) -> ApprovalRequest:
        handler = cast(_Update[ApprovalRequest], self._call(proposal.call_id).edit)
        return await handler(_without_call_id(proposal, EditProposal))

    def _validate_answer(self, answer: InlineAnswer) -> None:
        self._call(answer.call_id)._validate_answer(_without_call_id(answer, UserAnswer))

    def _answer(self, answer: InlineAnswer) -> AskUserOutput:
        handler = cast(Callable[[UserAnswer], AskUserOutput], self._call(answer.call_id).answer)
        return handler(_without_call_id(answer, UserAnswer))

    # Signals: any JSON with a call id; the call's own handler validates the rest ---------------

    def _approve(self, payload: Any) -> None:
        call, rest = self._addressed(payload, "approve")
        if call is not None:
            call.approve(rest)

    def _deny(self, payload: Any) -> None:
        call, rest = self._addressed(payload, "deny")
        if call is not None:
            call.deny(rest)

    def _answer_signal(self, payload: Any) -> None:
        call, rest = self._addressed(payload, "answer")
        if call is not None:
            call.answer_signal(rest)

    def _addressed(self, payload: Any, verb: str) -> tuple[InlineCall | None, Any]:
        call_id = payload.get("call_id") if isinstance(payload, dict) else None
        call = self._calls.get(call_id) if isinstance(call_id, str) else None
        if call is None:
            workflow.logger.warning(
                "toolcalls: %s signal ignored: no inline call %r in this workflow",
                verb,
                str(call_id)[:200],
            )
            return None, None
        return call, {key: value for key, value in payload.items() if key != "call_id"}

    def _status(self, call_id: str) -> CallState:
        return self._call(call_id).status()


def _without_call_id(payload: BaseModel, model: type[_M]) -> _M:
    """``payload`` as the plain ``ToolCallWorkflow`` handler's ``model``."""
    return model.model_validate(payload.model_dump(exclude={"call_id"}))


def _bounded(waiting: list[InlinePending]) -> list[InlinePending]:
    """The first ``MAX_LISTED`` entries, requests left out of those past ``MAX_MEMO_BYTES``."""
    converter = workflow.payload_converter()
    left = MAX_MEMO_BYTES
    listed = []
    for entry in waiting[:MAX_LISTED]:
        size = encoded_size(converter.to_payloads([entry]))
        if size > left:
            entry = entry.model_copy(update={"approval": None, "question": None, "omitted": True})
            size = encoded_size(converter.to_payloads([entry]))
        left -= size
        listed.append(entry)
    return listed
