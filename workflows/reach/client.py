"""``ToolCallClient``: what applications and UIs use to start calls and decide on them.

Everything a UI needs works with no worker running: ``pending()`` is a visibility query on the
search attributes with each call's ``ApprovalRequest`` or ``UserQuestion`` from its memo, and
``status()`` falls back to describe, memo and history. ``decide`` uses the ``decide`` update when a
worker serves the call (so a rejected decision comes back with the validator's reason) and the
signal when none does (the decision is queued and applied when a worker returns).

A workflow id runs one call, once: ``start`` never reuses an id, and a start for an id that exists
returns that call (joined while it runs, its recorded result once it has ended), so a retrying
client is safe. Requests, decisions and answers are measured with the client's data converter,
codec included, and refused before they are sent when Temporal would refuse them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import WorkflowAlreadyStartedError

from toolcalls.workflows.call.definitions import DefinitionsWorkflow
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import ApprovalRequest
from toolcalls.workflows.models.call import (
    DEFAULT_TASK_QUEUE,
    MEMO_METADATA,
    MEMO_PENDING_APPROVAL,
    MEMO_PENDING_QUESTION,
    SEARCH_CAPABILITIES,
    SEARCH_STATUS,
    SEARCH_TOOL,
    WORKFLOW_NAME,
    CallState,
    CallStatus,
    Phase,
    ToolCallRequest,
    ToolCallResult,
)
from toolcalls.workflows.models.connection import MEMO_PENDING_CONNECTION, ConsentRequest
from toolcalls.workflows.models.definitions import (
    Definitions,
    DefinitionsRequest,
)
from toolcalls.workflows.models.grant import Grant, Revocation
from toolcalls.workflows.models.limits import PayloadTooLarge, check_request
from toolcalls.workflows.models.question import (
    UserQuestion,
)
from toolcalls.workflows.models.reconcile import Reconciliation
from toolcalls.workflows.models.views import (
    CallConflict,
    CallNotFound,
    CallView,
    Delivery,
    FinishedCall,
    NoPendingRequest,
    Outcome,
    PendingCall,
    PendingPage,
    Started,
    finished_state,
    memo_metadata,
    metadata_of,
    model_or_none,
)
from toolcalls.workflows.reach.client_base import ClientBase, Handle, Inline
from toolcalls.workflows.reach.converter import pydantic_converter, with_pydantic_converter
from toolcalls.workflows.reach.finished import list_finished
from toolcalls.workflows.reach.follow import FollowEvent, follow
from toolcalls.workflows.reach.grant_client import list_grants, revoke_grant
from toolcalls.workflows.reach.pending import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    PageTokenError,
    list_pending,
    pending_page,
)
from toolcalls.workflows.reach.reconcile import NotReconcilable, reconcile_call, recorded_answer
from toolcalls.workflows.reach.stop import Cancellation, cancel_call

PLAN_WAIT = timedelta(seconds=30)
"""How long ``planned`` waits for a worker that serves the call to plan it."""
DEFINITIONS_WAIT = timedelta(seconds=30)
"""How long ``definitions`` waits for a worker of the deployment to answer."""
PLAN_POLL_SECONDS = 0.2

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "CallConflict",
    "CallNotFound",
    "CallView",
    "Cancellation",
    "Delivery",
    "FinishedCall",
    "NoPendingRequest",
    "NotReconcilable",
    "Outcome",
    "PageTokenError",
    "PayloadTooLarge",
    "PendingCall",
    "PendingPage",
    "Reconciliation",
    "Started",
    "ToolCallClient",
    "pydantic_converter",
    "with_pydantic_converter",
]


class ToolCallClient(ClientBase):
    """Start calls, list and inspect them, decide and answer (``ClientBase``)."""

    @classmethod
    async def connect(
        cls,
        address: str = "localhost:7233",
        *,
        namespace: str = "default",
        task_queue: str = DEFAULT_TASK_QUEUE,
        tracing: bool = False,
        **connect: Any,
    ) -> ToolCallClient:
        """Connect with the pydantic data converter every toolcalls payload needs.

        A deployment that encrypts or stores payloads passes its own converter, which keeps its
        codec and store:
        ``data_converter=toolcalls.worker.payloads.converter.data_converter(config)``.
        ``tracing=True`` adds the SDK's OpenTelemetry ``TracingInterceptor`` (the ``otel`` extra),
        so a trace runs from the application's span through the call.
        """
        connect.setdefault("data_converter", pydantic_data_converter)
        if tracing:
            from temporalio.contrib.opentelemetry import TracingInterceptor

            connect["interceptors"] = [*connect.get("interceptors", ()), TracingInterceptor()]
        client = await Client.connect(address, namespace=namespace, **connect)
        return cls(client, task_queue=task_queue)

    async def start(self, request: ToolCallRequest, *, workflow_id: str | None = None) -> Handle:
        """Start a call, or return the call its id already names (see ``start_or_join``)."""
        return (await self.start_or_join(request, workflow_id=workflow_id)).handle

    async def start_or_join(
        self, request: ToolCallRequest, *, workflow_id: str | None = None
    ) -> Started:
        """Start a call; for an id that exists, that call, and nothing is started.

        The id defaults to ``toolcall-<call_id or a fresh uuid>``; it is never reused, whatever
        became of its call. Raises ``PayloadTooLarge`` for a request Temporal would refuse,
        ``CallConflict`` for an id that names another call (another tool or other arguments), and
        ``MissingKeys`` when this client has no keys and the task queue's workers encrypt.
        """
        await check_request(self.client.data_converter, request)
        await self.keys_check.refuse_without_keys(self.client, self.task_queue)
        workflow_id = workflow_id or f"toolcall-{request.call_id or uuid.uuid4()}"
        metadata = memo_metadata(request.metadata)
        try:
            handle = await self.client.start_workflow(
                ToolCallWorkflow.run,
                request,
                id=workflow_id,
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                memo={MEMO_METADATA: metadata} if metadata is not None else None,
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(SEARCH_STATUS, Phase.PLANNING.value),
                        SearchAttributePair(SEARCH_TOOL, request.tool[:200]),
                    ]
                ),
            )
        except WorkflowAlreadyStartedError:
            return await self._existing(request, workflow_id)
        return Started(handle, existing=False, running=True)

    async def _existing(self, request: ToolCallRequest, workflow_id: str) -> Started:
        """The call ``workflow_id`` already names, if it is the same call as ``request``."""
        handle = self.handle(workflow_id)
        description = await handle.describe()
        if description.workflow_type != WORKFLOW_NAME:
            raise CallConflict(
                f"{workflow_id} is a {description.workflow_type} workflow, not a tool call"
            )
        async for event in handle.fetch_history_events(page_size=1):
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            (first,) = await self.client.data_converter.decode(payloads, [ToolCallRequest])
            break
        else:  # pragma: no cover - a workflow's history starts with its start event
            raise CallConflict(f"{workflow_id}: the call's history is empty")
        if (first.tool, first.arguments) != (request.tool, request.arguments):
            raise CallConflict(
                f"{workflow_id} is already a call of {first.tool} with other arguments; "
                "a call id runs one call, once"
            )
        running = description.status is WorkflowExecutionStatus.RUNNING
        return Started(handle, existing=True, running=running)

    async def planned(self, workflow_id: str, *, timeout: timedelta = PLAN_WAIT) -> CallView:
        """The call once it is past planning or has ended, so bad arguments show at once; one
        that needs a human, once its request is out (past preparing its preview), so that a
        decision can follow at once.

        A call no worker serves is returned as it is (it is planned when a worker comes); so is
        one still planning or preparing after ``timeout``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout.total_seconds()
        while True:
            view = await self.status(workflow_id)
            settling = view.running and view.state.phase in (Phase.PLANNING, Phase.PREPARING)
            if not settling or not view.live or loop.time() >= deadline:
                return view
            await asyncio.sleep(PLAN_POLL_SECONDS)

    async def call(
        self, request: ToolCallRequest, *, workflow_id: str | None = None
    ) -> ToolCallResult:
        """Start a call and wait for its result."""
        return await (await self.start(request, workflow_id=workflow_id)).result()

    async def cancel(self, workflow_id: str, *, reason: str | None = None) -> Cancellation:
        """Ask the call to stop (``toolcalls.workflows.reach.stop``): a waiting call or a running
        read ends ``canceled``, a running write ``uncertain``; a running process has its whole
        group killed (the partial output kept). A call that has ended is left as it is
        (``requested`` is ``False``); an unknown id raises ``CallNotFound``."""
        return await cancel_call(self.client, workflow_id, reason)

    def follow(self, workflow_id: str, from_offset: int = 0) -> AsyncIterator[FollowEvent]:
        """The call's progress items from ``from_offset`` on (a ``ProgressGap`` first for items
        dropped before they were read), then its ``ToolCallResult``; see docs/progress.md."""
        return follow(self.client, workflow_id, from_offset)

    async def pending(self, *, limit: int = 100) -> list[PendingCall]:
        """Calls waiting for an approval or an answer, newest first; no worker needed. Inline
        calls are listed from their parent's memo, at the parent's place in the order."""
        return await list_pending(self.client, limit=limit)

    async def finished(self, *, limit: int = 50) -> list[FinishedCall]:
        """Calls that have ended, the most recently closed first (visibility: no worker needed)."""
        return await list_finished(self.client, limit=limit)

    async def result_of(self, call: FinishedCall) -> ToolCallResult:
        """The recorded result of a call that has ended (read from its history)."""
        handle = self.client.get_workflow_handle_for(
            ToolCallWorkflow.run, call.workflow_id, run_id=call.run_id
        )
        return await handle.result()

    async def pending_page(
        self, *, page_size: int = DEFAULT_PAGE_SIZE, page_token: str | None = None
    ) -> PendingPage:
        """One page of the calls waiting for a human, with how many wait in all and the token of
        the next page (``None`` on the last): ``toolcalls.workflows.reach.pending.pending_page``.

        Raises:
            ValueError: ``page_size`` is not 1-1000.
            PageTokenError: ``page_token`` is not one a page gave (nothing reaches the server).
        """
        return await pending_page(self.client, page_size=page_size, page_token=page_token)

    async def status(self, workflow_id: str) -> CallView:
        """The call's state: from the worker when one serves it, else from describe and history."""
        try:
            handle, description = await self.described(workflow_id)
        except Inline as inline:
            return await self.inline.status(inline.ref)
        running = description.status is WorkflowExecutionStatus.RUNNING
        if not running and description.status is WorkflowExecutionStatus.COMPLETED:
            result = await handle.result()
            settled = None
            if result.status is CallStatus.UNCERTAIN:
                settled = await recorded_answer(self.client, workflow_id)
            return CallView(
                finished_state(result),
                live=False,
                running=False,
                history_events=[],
                parent_id=description.parent_id,
                metadata=await _metadata(description),
                reconciliation=settled,
            )
        state = await self._live_state(handle, description) if running else None
        if state is not None:
            return CallView(
                state,
                live=True,
                running=True,
                history_events=[],
                parent_id=description.parent_id,
                metadata=await _metadata(description),
            )
        return await self._from_history(handle, description, running)

    async def _from_history(
        self, handle: Handle, description: WorkflowExecutionDescription, running: bool
    ) -> CallView:
        memo = await description.memo() if running else {}
        attrs = description.typed_search_attributes
        status = attrs.get(SEARCH_STATUS) or Phase.PLANNING.value
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        (request,) = await self.client.data_converter.decode(
            started.input.payloads, [ToolCallRequest]
        )
        # A call that ended without saying so (terminated, timed out) waits for nothing, whatever
        # its last search attribute and memo say.
        known = running and status in Phase.__members__.values()
        state = CallState(
            workflow_id=description.id,
            call_id=request.call_id or description.id,
            tool=attrs.get(SEARCH_TOOL) or request.tool,
            phase=Phase(status) if known else Phase.DONE,
            capabilities=list(attrs.get(SEARCH_CAPABILITIES) or []),
            pending_approval=model_or_none(ApprovalRequest, memo.get(MEMO_PENDING_APPROVAL)),
            pending_question=model_or_none(UserQuestion, memo.get(MEMO_PENDING_QUESTION)),
            events=[],
            result=None,
            pending_connection=model_or_none(ConsentRequest, memo.get(MEMO_PENDING_CONNECTION)),
        )
        names = [EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events]
        return CallView(
            state,
            live=False,
            running=running,
            history_events=names,
            parent_id=description.parent_id,
            metadata=request.metadata,
        )

    async def reconcile(self, workflow_id: str) -> Reconciliation:
        """Ask the backend whether an ``uncertain`` call's effect happened, read-only, and record
        the answer (``ToolCallReconcile``); the write is never run again. A ``found`` answer
        stays; ``not_found`` looks again each time.

        Raises:
            NotReconcilable: the call did not end ``uncertain`` (or runs inline in a parent).
        """
        return await reconcile_call(self, workflow_id)

    async def definitions(
        self, *, profile: str | None = None, format: str = "anthropic"
    ) -> Definitions:
        """A profile's model-facing definitions (or every enabled tool's), from the deployment:
        a short ``ToolDefinitions`` workflow asks a worker serving it."""
        return await self.client.execute_workflow(
            DefinitionsWorkflow.run,
            DefinitionsRequest(profile=profile, format=format),
            id=f"toolcalls-definitions-{uuid.uuid4()}",
            task_queue=self.task_queue,
            execution_timeout=DEFINITIONS_WAIT,
        )

    async def grants(self, *, tool: str | None = None) -> list[Grant]:
        """The standing grants in force (from visibility: no worker needed)."""
        return await list_grants(self.client, tool=tool)

    async def revoke_grant(self, grant_id: str, *, by: str = "", reason: str | None = None) -> None:
        """End a standing grant now; later calls it would have approved ask a human again."""
        await revoke_grant(self.client, grant_id, Revocation(by=by, reason=reason))


async def _metadata(description: WorkflowExecutionDescription) -> dict[str, str]:
    """The request metadata the call's memo records (see ``MEMO_METADATA``)."""
    return metadata_of(await description.memo_value(MEMO_METADATA, None))
