"""``Connecting`` is a part of the one workflow class (see ``toolcalls.workflows.call.base``):
the wait of a call whose principal has not yet connected the account its tool acts with.

The plan records the consent request (``CallPlan.consent``); the call publishes it (``status``,
memo ``pending_connection``, phase ``awaiting_connection``) and waits durably, with a timer, for
the ``connected`` signal the inbox sends once it stored the principal's tokens. No patch guards
the wait: only plans that carry a consent request take it, and no plan before connections did.
Without the signal in time the call ends ``denied / connection_required``, and nothing ran.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from toolcalls.workflows.call.parts import _Ended
from toolcalls.workflows.call.quotas import Quotas
from toolcalls.workflows.models.call import (
    CallPlan,
    CallStatus,
    ErrorCode,
    EventKind,
    Phase,
    ToolError,
)
from toolcalls.workflows.models.connection import (
    CONNECTED_SIGNAL,
    MEMO_PENDING_CONNECTION,
    ConnectedNotice,
    ConsentRequest,
)


class Connecting(Quotas):
    """Waits, when the plan says so, for the call's principal to connect their account."""

    def _init_connections(self) -> None:
        self._pending_connection: ConsentRequest | None = None
        self._connected = False

    def _acting(self, plan: CallPlan) -> str | None:
        """The principal a connection-backed tool acts for (``None`` for every other tool)."""
        if plan.connection is None or plan.principal is None:
            return None
        return plan.principal.id

    async def _await_connection(self, plan: CallPlan) -> None:
        consent = plan.consent
        assert consent is not None
        now = workflow.now()
        wait = self._bounded(consent.timeout)
        pending = consent.model_copy(
            update={"expires_at": now + wait if wait is not None else None}
        )
        self._pending_connection = pending
        self._set_phase(Phase.AWAITING_CONNECTION, memo={MEMO_PENDING_CONNECTION: pending})
        who = f"{consent.principal}'s {consent.provider} account"
        self._event(EventKind.CONNECTION_REQUESTED, f"waiting for {who} to be connected")
        connected = await self._wait(lambda: self._connected, wait)
        self._pending_connection = None
        workflow.upsert_memo({MEMO_PENDING_CONNECTION: None})
        if not connected:
            self._event(EventKind.CONNECTION_TIMED_OUT, f"{who} was not connected in time")
            self._check_budget(during_wait=True)
            error = ToolError(
                code=ErrorCode.CONNECTION_REQUIRED,
                message=(
                    f"{plan.tool}: {consent.principal} did not connect a {consent.provider} "
                    "account in time; nothing ran"
                ),
                retryable=True,
            )
            raise _Ended(self._end_with(CallStatus.DENIED, error))
        self._event(EventKind.CONNECTED, f"{who} is connected")

    @workflow.signal(name=CONNECTED_SIGNAL)
    def connected(self, payload: Any) -> None:
        """The principal's account is connected (a ``ConnectedNotice``); sent by the inbox."""
        notice = self._parse_signal(ConnectedNotice, payload, "connected")
        if notice is None:
            return
        pending = self._pending_connection
        if pending is None or self._connected:
            problem = "no connection is pending"
        elif (notice.provider, notice.principal) != (pending.provider, pending.principal):
            problem = f"it names {notice.principal}'s {notice.provider} account"
        else:
            self._connected = True
            return
        self._event(EventKind.SIGNAL_IGNORED, f"connected: {problem}")
