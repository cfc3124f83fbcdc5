"""The deployment's word on what ``ToolCallWorkflow`` decided: attestations of its plans,
approvals and grants.

``Attested`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``). The tool
activities, the notifications and the grant lookup run only what an attestation vouches for
(``toolcalls.activities.attestations``): the plan's comes with the plan; an approval's and a
grant's come from the ``toolcalls.attest`` local activity, which only ``ToolCallWorkflow`` on the
deployment's worker can ask. Runs recorded before attestations existed replay without them
(``ATTEST_PATCH``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from toolcalls.workflows.call.base import CallBase
from toolcalls.workflows.call.parts import _Ended
from toolcalls.workflows.models.attest import (
    ATTEST_ACTIVITY,
    ATTEST_PATCH,
    Attestation,
    AttestedDecision,
    AttestInput,
)
from toolcalls.workflows.models.call import CallPlan, CallStatus, ErrorCode, ExecuteInput

ATTEST_TIMEOUT = timedelta(seconds=10)
ATTEST_RETRY = RetryPolicy(maximum_attempts=3)


class Attested(CallBase):
    """Asks the deployment's worker to vouch for this run's decisions."""

    async def _tool_input(self, plan: CallPlan) -> ExecuteInput:
        """The input of the tool's activity for ``plan``, with the deployment's attestation."""
        if plan.digest not in self._attestations and self._attests():
            # Planned before plans were attested (a call in flight across an upgrade).
            self._attestations[plan.digest] = await self._attest(
                self._claim(plan, AttestedDecision.PLANNED), "the plan"
            )
        return self._execute_input(plan)

    async def _attest_approval(self, plan: CallPlan) -> None:
        """Have the approval that lets ``plan`` run attested: the tool activity checks it."""
        approval = self._approval
        if approval is None or not approval.approved or plan.activity is None:
            return
        if not self._attests():
            return
        decision = (
            AttestedDecision.GRANTED if approval.via == "grant" else AttestedDecision.APPROVED
        )
        claim = self._claim(plan, decision).model_copy(update={"approver": approval.approver})
        self._attestations[plan.digest] = await self._attest(claim, "the approval")

    def _attests(self) -> bool:
        """Whether this run asks for attestations of its decisions (not one recorded before)."""
        return workflow.patched(ATTEST_PATCH)

    def _claim(self, plan: CallPlan, decision: AttestedDecision) -> AttestInput:
        return AttestInput(
            call_id=self._call_id,
            digest=plan.digest,
            visible_tools=plan.visible_tools,
            decision=decision,
            principal=plan.principal.id if plan.connection and plan.principal else None,
        )

    async def _attest(self, claim: AttestInput, what: str) -> Attestation:
        try:
            attestation: Attestation = await workflow.execute_local_activity(
                ATTEST_ACTIVITY,
                claim,
                result_type=Attestation,
                start_to_close_timeout=ATTEST_TIMEOUT,
                retry_policy=ATTEST_RETRY,
            )
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                raise asyncio.CancelledError() from None
            raise self._not_attested(what, err.cause) from None
        except ApplicationError as err:
            raise self._not_attested(what, err) from None
        return attestation

    def _not_attested(self, what: str, cause: BaseException | None) -> _Ended:
        return _Ended(
            self._end(CallStatus.FAILED, ErrorCode.INTERNAL, f"attesting {what} failed: {cause}")
        )
