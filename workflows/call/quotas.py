"""``Quotas`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``): a
planned call's ``[[quotas]]`` reserved before any approval is asked, and given back when the
call ends without its tool having run (``toolcalls.workflows.models.quota``).

Only a plan that names quotas reserves anything, so a history recorded before quotas existed
takes the old path without a patch.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError

from toolcalls.workflows.call.approval_flow import ApprovalFlow
from toolcalls.workflows.call.parts import _Ended
from toolcalls.workflows.models.call import (
    CallPlan,
    CallStatus,
    ErrorCode,
    EventKind,
    ToolError,
)
from toolcalls.workflows.models.quota import (
    RELEASE_ACTIVITY,
    RESERVE_ACTIVITY,
    QuotaDenial,
    ReleaseInput,
    ReserveInput,
)

LEDGER_ATTEMPT = timedelta(seconds=30)
LEDGER_PATIENCE = timedelta(minutes=5)
"""How long a call keeps trying to reach its ledgers before it ends ``failed`` (reserving) or
leaves its units to expire with their window (releasing)."""
_LEDGER_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10)
)


class Quotas(ApprovalFlow):
    """Reserves a call's quota units, and releases them when its tool never ran."""

    def _init_quotas(self) -> None:
        self._quota_ledgers: list[str] = []
        """The ledgers that may hold this run's units (released unless the tool ran)."""
        self._executed = False

    def _holder(self) -> str:
        info = workflow.info()
        return f"{info.workflow_id}/{info.run_id}"

    async def _reserve(self, plan: CallPlan) -> None:
        """Reserve the plan's quota units, or end the call ``denied/quota_exceeded``."""
        self._quota_ledgers = [charge.ledger for charge in plan.quotas]
        try:
            denial: QuotaDenial = await workflow.execute_activity(
                RESERVE_ACTIVITY,
                ReserveInput(holder=self._holder(), charges=plan.quotas),
                result_type=QuotaDenial,
                start_to_close_timeout=LEDGER_ATTEMPT,
                schedule_to_close_timeout=LEDGER_PATIENCE,
                retry_policy=_LEDGER_RETRY,
            )
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                raise asyncio.CancelledError() from None
            message = f"{plan.tool}: its quota ledgers could not be reached: {err.cause}"
            raise _Ended(
                self._end(CallStatus.FAILED, ErrorCode.TOOL_UNAVAILABLE, message)
            ) from None
        if not denial.denied:
            names = ", ".join(f"{c.quota} ({c.units})" for c in plan.quotas)
            self._event(EventKind.QUOTA_RESERVED, names)
            return
        self._quota_ledgers = []  # the activity gave back what it had reserved
        who = plan.principal.id if plan.principal else "calls without a principal"
        window = _window(denial.window)
        message = (
            f"{plan.tool}: quota {denial.quota} exceeded: {denial.used} of {denial.limit} "
            f"per {window} used by {who}"
        )
        if denial.retry_at is not None:
            message += f"; try again after {denial.retry_at.isoformat(timespec='seconds')}"
        else:
            message += "; the call alone costs more than the quota allows"
        self._event(EventKind.QUOTA_EXCEEDED, message)
        error = ToolError(
            code=ErrorCode.QUOTA_EXCEEDED,
            message=message,
            retryable=denial.retry_at is not None,
            retry_at=denial.retry_at,
        )
        raise _Ended(self._end_with(CallStatus.DENIED, error))

    async def _release_unexecuted(self) -> None:
        """Give back the units of a call whose tool never ran; once the tool was scheduled,
        they stay spent until their window passes."""
        if not self._quota_ledgers or self._executed:
            return
        ledgers, self._quota_ledgers = self._quota_ledgers, []
        try:
            await workflow.execute_activity(
                RELEASE_ACTIVITY,
                ReleaseInput(holder=self._holder(), ledgers=ledgers),
                result_type=int,
                start_to_close_timeout=LEDGER_ATTEMPT,
                schedule_to_close_timeout=LEDGER_PATIENCE,
                retry_policy=_LEDGER_RETRY,
            )
        except ActivityError as err:
            workflow.logger.warning(
                "quota units not given back (they expire with their window): %s", err.cause
            )


def _window(window: timedelta | None) -> str:
    if window is None:
        return "window"
    seconds = int(window.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
