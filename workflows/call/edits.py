"""Edited arguments in ``ToolCallWorkflow``'s approval wait: an approval or a proposal with other
arguments is planned and prepared again, and the approval binds to the new digest.

``Edits`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``). An edit
the plan or the tool's preview refuses is refused, and the request waits on; the main loop of the
wait (``toolcalls.workflows.call.approval_flow``) applies queued edits one at a time.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from toolcalls.workflows.call.approvals import allowed_names
from toolcalls.workflows.call.decisions import Decisions
from toolcalls.workflows.call.grants_and_notices import _short
from toolcalls.workflows.call.parts import _Refused
from toolcalls.workflows.models.approval import (
    ApprovalRecord,
    ApprovalRequest,
    ArgumentEdit,
    DecisionInput,
)
from toolcalls.workflows.models.call import CallPlan, Effect, ErrorCode, EventKind, Phase
from toolcalls.workflows.rules import policy

EDIT_REFUSED_PATCH = "edit-refused-keeps-waiting"
"""An edit whose preview the tool refuses is refused and the call waits on; an edit's update
answers when the call ends first; decisions wait until an edit is applied."""
EDIT_FAULTS = frozenset(
    {
        ErrorCode.INVALID_ARGUMENTS,
        ErrorCode.POLICY_DENIED,
        ErrorCode.PRECONDITION_FAILED,
        ErrorCode.OUTPUT_TOO_LARGE,
    }
)
"""The codes of a preview's failure that are the edited arguments' fault: the edit is refused.
Any other failure (the tool failed, timed out, no worker took it) ends the call as before."""


class Edits(Decisions):
    """Planning, preparing and recording an edit of the pending request."""

    _edit_results: dict[int, ApprovalRecord | ApprovalRequest | str]

    async def _edit_outcome(self, number: int) -> ApprovalRecord | ApprovalRequest:
        """What the main loop made of edit ``number``; raises why it was refused, or (with the
        patch) that the call ended before applying it."""
        answers_end = workflow.patched(EDIT_REFUSED_PATCH)
        await workflow.wait_condition(
            lambda: number in self._edit_results or (answers_end and self._result is not None)
        )
        if number not in self._edit_results:
            ended = self._result
            assert ended is not None
            why = ended.error.message if ended.error else ended.status.value
            raise _rejected(f"the call ended before the edit was applied: {why}")
        outcome = self._edit_results.pop(number)
        if isinstance(outcome, str):
            raise _rejected(outcome)
        return outcome

    async def _apply_edit(
        self,
        plan: CallPlan,
        decision: DecisionInput,
        via: str,
        number: int,
        approve: bool,
        *,
        refuse: bool = False,
    ) -> CallPlan:
        """Plan and prepare the edited arguments; the approver's approval binds to them. With
        ``refuse``, a preview the tool refuses (``EDIT_FAULTS``) refuses the edit as the plan
        does: the original request keeps waiting."""
        old = self._approvals
        assert old is not None
        assert decision.arguments is not None
        outcome = await self._plan_call(decision.arguments)
        refusal = None
        edited = outcome.plan
        if edited is None:
            refusal = outcome.error.message if outcome.error else "the edit could not be planned"
        else:
            verdict = policy.decide_plan(edited, self._request.policy)
            allowed = allowed_names(edited.approval_rule)
            if verdict.effect is Effect.DENY:
                refusal = f"the edited call would be denied: {'; '.join(verdict.reasons())}"
            elif allowed is not None and decision.approver not in allowed:
                refusal = (
                    f"{decision.approver!r} may not approve the edited call "
                    f"({', '.join(edited.capabilities) or 'no capabilities'})"
                )
        prepared = None
        if refusal is None and edited is not None and refuse and edited.prepare:
            try:
                prepared = await self._prepare(edited, EDIT_FAULTS)
            except _Refused as refused:
                refusal = refused.reason
                self._set_phase(Phase.AWAITING_APPROVAL)
        if refusal is not None or edited is None:
            self._edit_results[number] = refusal or "refused"
            self._event(EventKind.EDIT_REFUSED, f"by {decision.approver}: {refusal}")
            return plan
        self._edits.append(
            ArgumentEdit(
                by=decision.approver,
                at=workflow.now(),
                original=plan.arguments,
                original_digest=plan.digest,
                edited=edited.arguments,
                digest=edited.digest,
            )
        )
        self._event(
            EventKind.ARGUMENTS_EDITED,
            f"by {decision.approver} via {via}: {_short(plan.arguments)} -> "
            f"{_short(edited.arguments)}",
        )
        self._plan = edited
        verdict = policy.decide_plan(edited, self._request.policy)
        await self._request_approval(edited, verdict, old.request.expires_at, prepared)
        approvals = self._approvals
        assert approvals is not None
        if not approve:
            # Proposed only: the new request waits for decisions like any other.
            assert self._pending_approval is not None
            self._edit_results[number] = self._pending_approval
            return edited
        bound = decision.model_copy(
            update={
                "request_id": approvals.request.request_id,
                "digest": edited.digest,
                "arguments": None,
            }
        )
        self._edit_results[number] = self._accept(bound, True, via)
        return edited


def _rejected(reason: str) -> ApplicationError:
    """An update's failure for an edit the workflow refused after its validator let it in."""
    return ApplicationError(
        reason, type="rejected", non_retryable=True, category=ApplicationErrorCategory.BENIGN
    )
