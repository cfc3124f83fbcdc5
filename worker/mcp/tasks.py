"""MCP Tasks (the ``io.modelcontextprotocol/tasks`` extension of 2026-07-28), backed by workflows.

A client that declares the extension in a request's capabilities may get a ``tools/call`` answered
with a task (``resultType: "task"``): when the call has not ended within ``GRACE_SECONDS`` (it
waits for an approval or an answer, or runs long), the request returns at once with a task id the
client polls with ``tasks/get``, answers through with ``tasks/update`` and stops with
``tasks/cancel``. A client that does not declare it gets the synchronous call, as before.

The task is the call's ``ToolCallWorkflow``, and nothing about it lives in this process: its id is
the workflow id sealed for the client's principal (``toolcalls.worker.mcp.sealing``), and
``tasks/get`` reads the call's state from Temporal each time. A task survives a restart of the
server (with ``[mcp] state_key_env`` set) and of the worker. A task id that is tampered with, or
sealed for another principal, is refused like one that names nothing (``-32602``).

``tasks/get`` reports:

- ``working``: planned, preparing its preview, running, or waiting for a decision nobody can give
  in the client (``statusMessage`` says who may decide and where: the inbox when one is configured);
- ``input_required``: the question of ``ask_user`` as a form, the approval as a form
  (``approve_via_elicitation``) or as a link to the call's page in the inbox (URL mode); a request
  the client answered is not asked again by this process;
- ``completed``: the ``CallToolResult`` the synchronous call would have returned (the shared
  model-facing text; a tool error is ``isError: true``, an uncertain write says not to repeat it);
- ``cancelled``: the call ended ``canceled``, or ``uncertain`` because it was canceled while its
  write ran (``statusMessage``: the model-facing text, with the partial output);
- ``failed``: the workflow ended without a result (terminated, timed out).

``tasks/cancel`` cancels the workflow as ``toolcalls cancel`` does: a running process is killed
with its process group, a write that may have happened ends ``uncertain``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, ValidationError
from temporalio.client import WorkflowExecutionDescription, WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.worker.mcp.elicit import Form, may_decide, takes_forms
from toolcalls.worker.mcp.follow import deliver, output_text, progress_text
from toolcalls.worker.mcp.front import Front
from toolcalls.worker.mcp.handover import inbox_elicitation, takes_links
from toolcalls.worker.mcp.oauth import verified_principal
from toolcalls.worker.mcp.results import META_WORKFLOW_ID, call_result
from toolcalls.worker.mcp.sealing import TaskIds
from toolcalls.workflows.models.call import CallStatus, EventKind, Phase, ToolCallResult
from toolcalls.workflows.models.reply import model_reply
from toolcalls.workflows.reach.client import CallNotFound, CallView, Started
from toolcalls.workflows.reach.follow import latest_item

EXTENSION = "io.modelcontextprotocol/tasks"
GRACE_SECONDS = 2.0
"""A call still going after this long is answered with a task."""
POLL_INTERVAL_MS = 2_000
"""The ASGI scope key an authenticating layer sets to the client's principal."""
TASK_FIELDS = frozenset(
    {"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
)
NOT_FOUND = "Failed to retrieve task: Task not found"

log = logging.getLogger("toolcalls.mcp")


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId", min_length=1)


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


def principal_of(front: Front, ctx: Any) -> str:
    """Who the request was authenticated as: what an authenticating layer put in the ASGI scope,
    else the identity of the static bearer token (HTTP) or of the local user (stdio)."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if isinstance(scope, Mapping) and (principal := verified_principal(scope)) is not None:
        return principal
    if front.process_session is None:
        return f"token:{front.identity}"
    return f"local:{front.identity}"


def declares_tasks(ctx: Any) -> bool:
    """Whether the request declares the Tasks extension (2026-07-28 per-request capabilities)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities: types.ClientCapabilities | None = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return extensions is not None and EXTENSION in extensions


class Tasks:
    """The Tasks extension of one server (see the module docstring)."""

    def __init__(self, front: Front, ids: TaskIds) -> None:
        self.front = front
        self.ids = ids
        self.process = secrets.token_hex(4)
        """Part of every input request's key: a restarted server asks afresh, under new keys."""
        self.answered: set[str] = set()
        """Input request keys the client has answered: never asked again."""

    def register(self, server: Server) -> None:
        """Serve ``tasks/get``, ``tasks/update`` and ``tasks/cancel``, and advertise them."""
        server.extensions[EXTENSION] = {}
        server.add_request_handler("tasks/get", TaskParams, self.get)
        server.add_request_handler("tasks/update", UpdateTaskParams, self.update)
        server.add_request_handler("tasks/cancel", TaskParams, self.cancel)

    async def answer(self, ctx: Any, started: Started) -> types.CallToolResult | dict[str, Any]:
        """The result of a call that ends within the grace, else the task that follows it."""
        result = None
        with anyio.move_on_after(GRACE_SECONDS):
            try:
                result = await started.handle.result()
            except (WorkflowFailureError, RPCError) as exc:
                log.info("%s: %s", started.handle.id, exc)
        if result is not None:
            return call_result(result)
        task_id = self.ids.seal(started.handle.id, principal_of(self.front, ctx))
        log.info("%s: answered with a task", started.handle.id)
        task = await self._task(ctx, task_id, started.handle.id)
        # The seed is a Task: what a status carries (a form, the result) comes from tasks/get.
        seed = {key: value for key, value in task.items() if key in TASK_FIELDS or key == "_meta"}
        if seed["status"] == "input_required":
            seed["status"] = "working"
        return {"resultType": "task", **seed}

    async def get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        return await self._task(ctx, params.task_id, self._open(ctx, params))

    async def update(self, ctx: Any, params: UpdateTaskParams) -> dict[str, Any]:
        workflow_id = self._open(ctx, params)
        view = await self._view(workflow_id)
        outstanding = self._requests(ctx, view)
        for key, response in params.input_responses.items():
            if key not in outstanding:
                continue  # never issued, answered already, or settled elsewhere: ignored
            try:
                result = types.ElicitResult.model_validate(response)
            except ValidationError:
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"inputResponses[{key!r}] is not an elicitation result",
                ) from None
            self.answered.add(key)
            form, _ = outstanding[key]
            if form is None:
                log.info(
                    "%s: the inbox link was %s; the call still waits", workflow_id, result.action
                )
                continue
            note = await deliver(self.front, workflow_id, form, result)
            if note:
                log.info("%s: %s", workflow_id, note)
        return {}

    async def cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        workflow_id = self._open(ctx, params)
        await self._view(workflow_id)
        log.info("%s: canceled through tasks/cancel", workflow_id)
        await self.front.calls.cancel(workflow_id)
        return {}

    def _open(self, ctx: Any, params: TaskParams) -> str:
        if not declares_tasks(ctx):
            raise MCPError(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="Missing required client capability",
                data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
            )
        workflow_id = self.ids.open(params.task_id, principal_of(self.front, ctx))
        if workflow_id is None:
            raise MCPError(code=types.INVALID_PARAMS, message=NOT_FOUND)
        return workflow_id

    async def _view(self, workflow_id: str) -> CallView:
        try:
            return await self.front.calls.status(workflow_id)
        except CallNotFound:
            raise MCPError(code=types.INVALID_PARAMS, message=NOT_FOUND) from None
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                raise MCPError(code=types.INVALID_PARAMS, message=NOT_FOUND) from None
            raise MCPError(code=types.INTERNAL_ERROR, message=f"temporal: {exc.message}") from None

    async def _message(self, workflow_id: str, view: CallView) -> str:
        """The phase in words and, while the tool runs, the latest line or count it published."""
        text = progress_text(self.front, view)
        if view.state.phase is not Phase.RUNNING or view.state.result is not None:
            return text
        try:
            latest = await latest_item(self.front.calls.client, workflow_id)
        except Exception as exc:  # a passing Temporal error: the phase alone is still right
            log.debug("progress of %s: %s", workflow_id, exc)
            return text
        return f"{text}: {output_text(latest)}" if latest is not None else text

    async def _task(self, ctx: Any, task_id: str, workflow_id: str) -> dict[str, Any]:
        """The ``DetailedTask`` of the call ``workflow_id``, as ``tasks/get`` reports it."""
        view = await self._view(workflow_id)
        try:
            description = await self.front.calls.handle(workflow_id).describe()
        except RPCError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"temporal: {exc.message}") from None
        task: dict[str, Any] = {
            "taskId": task_id,
            "status": "working",
            "statusMessage": await self._message(workflow_id, view),
            "createdAt": _iso(description.start_time),
            "lastUpdatedAt": _iso(_last_update(view, description)),
            "ttlMs": None,
            "pollIntervalMs": POLL_INTERVAL_MS,
            "_meta": {META_WORKFLOW_ID: workflow_id},
        }
        result = view.state.result
        if result is not None:
            if _stopped(result):
                task.update(status="cancelled", statusMessage=model_reply(result).text)
            else:
                wire = call_result(result).model_dump(by_alias=True, mode="json", exclude_none=True)
                task.update(status="completed", result=wire)
        elif not view.running:
            message = f"{workflow_id}: the call ended without a result"
            task.update(
                status="failed",
                statusMessage=message,
                error={"code": types.INTERNAL_ERROR, "message": message},
            )
        elif requests := self._requests(ctx, view):
            task.update(
                status="input_required",
                inputRequests={key: request for key, (_, request) in requests.items()},
            )
        return task

    def _requests(self, ctx: Any, view: CallView) -> dict[str, tuple[Form | None, dict[str, Any]]]:
        """What the client may answer now, by key: a form (and what it answers) or an inbox link
        (``None``: answering it decides nothing)."""
        if not view.running or view.state.result is not None:
            return {}
        state, front = view.state, self.front
        forms = takes_forms(ctx.session)
        found: dict[str, tuple[Form | None, Any]] = {}
        question, approval = state.pending_question, state.pending_approval
        if question is not None and forms:
            form = Form.of_question(question)
            found[f"question-{question.request_id}-{self.process}"] = (form, _form(form))
        if approval is not None:
            if front.approve_via_elicitation and forms and may_decide(front.identity, approval):
                form = Form.of_approval(approval)
                found[f"approval-{approval.request_id}-{self.process}"] = (form, _form(form))
            elif front.inbox_url and takes_links(ctx.session):
                link = inbox_elicitation(approval, front.decide_at(state.workflow_id))
                request = types.ElicitRequest(params=link)
                found[f"inbox-{approval.request_id}-{self.process}"] = (None, request)
        return {
            key: (form, request.model_dump(by_alias=True, mode="json", exclude_none=True))
            for key, (form, request) in found.items()
            if key not in self.answered
        }


def _form(form: Form) -> types.ElicitRequest:
    params = types.ElicitRequestFormParams(message=form.message, requested_schema=form.schema)
    return types.ElicitRequest(params=params)


def _last_update(view: CallView, description: WorkflowExecutionDescription) -> datetime:
    state = view.state
    times = [description.start_time, description.close_time]
    if state.pending_approval is not None:
        times.append(state.pending_approval.requested_at)
    if state.pending_question is not None:
        times.append(state.pending_question.asked_at)
    return max(time for time in times if time is not None)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _stopped(result: ToolCallResult) -> bool:
    """Whether a cancellation ended the call: ``canceled``, or ``uncertain`` with the
    ``cancel_requested`` event of a write canceled while it ran."""
    if result.status is CallStatus.CANCELED:
        return True
    return result.status is CallStatus.UNCERTAIN and any(
        event.kind is EventKind.CANCEL_REQUESTED for event in result.events
    )
