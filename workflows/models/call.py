"""Wire models: everything that crosses a workflow, activity, update, signal or query boundary.

All of these travel through ``pydantic_data_converter`` and land in workflow history, so every
enum is a ``StrEnum`` and every field has a stable JSON form. Changing a field's meaning is a
wire change: keep old histories replaying (see ``tests/workflows/test_replay.py``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio.common import SearchAttributeKey

from toolcalls.workflows.models.approval import (
    ApprovalRecord,
    ApprovalRequest,
    ApprovalRule,
    ArgumentEdit,
)
from toolcalls.workflows.models.attest import Attestation
from toolcalls.workflows.models.connection import ConsentRequest
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.question import UserQuestion
from toolcalls.workflows.models.quota import QuotaCharge
from toolcalls.workflows.models.verdict import PolicyVerdict

WORKFLOW_NAME = "ToolCallWorkflow"
PLAN_ACTIVITY = "toolcalls.plan"
"""The plan local activity; besides it the workflow knows tool names, ``NOTIFY_ACTIVITY`` and the
grant lookup (``toolcalls.workflows.models.grant``)."""
NOTIFY_ACTIVITY = "toolcalls.notify"
DEFINITIONS_ACTIVITY = "toolcalls.definitions"
DEFINITIONS_WORKFLOW = "ToolDefinitions"
MARKER_WORKFLOW = "ToolCallsEncrypts"
"""The workflow type of an encrypting deployment's standing marker (one per task queue)."""

DEFAULT_TASK_QUEUE = "toolcalls"
DEFAULT_APPROVAL_TIMEOUT = timedelta(hours=24)

SEARCH_STATUS = SearchAttributeKey.for_keyword("ToolCallStatus")
SEARCH_TOOL = SearchAttributeKey.for_keyword("ToolName")
SEARCH_CAPABILITIES = SearchAttributeKey.for_keyword_list("ToolCapabilities")
SEARCH_GRANT_SCOPE = SearchAttributeKey.for_keyword("ToolCallGrantScope")
"""Of a standing grant (``toolcalls.workflows.models.grant``): ``deployment`` or ``parent:<workflow
id>``."""
SEARCH_INLINE_WAITING = SearchAttributeKey.for_int("ToolCallsWaiting")
"""Of a parent workflow: how many of its inline calls wait for a human
(``toolcalls.workflows.call.inline``)."""
SEARCH_ATTRIBUTES = (
    SEARCH_STATUS,
    SEARCH_TOOL,
    SEARCH_CAPABILITIES,
    SEARCH_GRANT_SCOPE,
    SEARCH_INLINE_WAITING,
)
MEMO_PENDING_APPROVAL = "pending_approval"
MEMO_PENDING_QUESTION = "pending_question"
MEMO_METADATA = "request_metadata"
"""The request's ``metadata``, set by ``ToolCallClient`` when it starts the call (never by the
workflow), so a list of waiting calls can say who asked without reading each history."""


def prepare_activity_name(tool: str) -> str:
    """Activity type of a tool's ``prepare`` step (the execute step is named after the tool)."""
    return f"{tool}.prepare"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Effect(StrEnum):
    """What a policy says about a capability; ordered ``allow < require_approval < deny``."""

    ALLOW = "allow"
    REQUIRE_APPROVAL = "require_approval"
    DENY = "deny"


class SideEffect(StrEnum):
    """A tool's side-effect class; it decides retries and what a lost activity means."""

    PURE = "pure"
    READ = "read"
    WRITE = "write"


class CallStatus(StrEnum):
    """The final status of a call."""

    COMPLETED = "completed"
    FAILED = "failed"
    DENIED = "denied"
    TIMED_OUT = "timed_out"
    CANCELED = "canceled"
    UNCERTAIN = "uncertain"


class Phase(StrEnum):
    """Where a call is; the value of the ``ToolCallStatus`` search attribute until it ends."""

    PLANNING = "planning"
    PREPARING = "preparing"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_ANSWER = "awaiting_answer"
    AWAITING_CONNECTION = "awaiting_connection"
    RUNNING = "running"
    DONE = "done"


class ErrorCode(StrEnum):
    """Every error a call can end with; also the ``type`` of activity ``ApplicationError``s."""

    UNKNOWN_TOOL = "unknown_tool"
    TOOL_UNAVAILABLE = "tool_unavailable"
    INVALID_ARGUMENTS = "invalid_arguments"
    POLICY_DENIED = "policy_denied"
    APPROVAL_DENIED = "approval_denied"
    RESPONDED = "responded"
    """An approver answered in place of the tool, which did not run (``response`` holds it)."""
    APPROVAL_TIMED_OUT = "approval_timed_out"
    BUDGET_EXCEEDED = "budget_exceeded"
    PRECONDITION_FAILED = "precondition_failed"
    EXECUTION_FAILED = "execution_failed"
    TIMED_OUT = "timed_out"
    CANCELED = "canceled"
    UNCERTAIN = "uncertain"
    OUTPUT_TOO_LARGE = "output_too_large"
    CONFIGURATION_ERROR = "configuration_error"
    INTERNAL = "internal"
    NETWORK_UNAVAILABLE = "network_unavailable"
    QUOTA_EXCEEDED = "quota_exceeded"
    """A ``[[quotas]]`` limit has no room for the call; ``retry_at`` says when it may."""
    CONNECTION_REQUIRED = "connection_required"
    """The tool acts with the principal's own account, and the call has no principal, or the
    principal did not connect the account in time; nothing ran."""


class ToolError(_Model):
    """Why a call did not complete, in terms a model can act on."""

    code: ErrorCode
    message: str
    retryable: bool = False
    fixable_args: list[str] = Field(default_factory=list)
    retry_at: datetime | None = None
    """When the call may be tried again (``quota_exceeded``); ``None``: not known."""


class CapabilityPolicy(_Model):
    """Effects for capabilities (``rules``) and whole tools (``tools``).

    A rule key is a capability (``filesystem.write``) or a prefix rule (``filesystem.*``). The most
    specific matching rule decides a capability; ``default_effect`` decides the rest. ``tools``
    adds an effect for a tool by name, which is how a tool without capabilities (``calculator``)
    can be made to require approval. See ``toolcalls.workflows.rules.policy`` for how policies
    combine.
    """

    rules: dict[str, Effect] = Field(default_factory=dict)
    tools: dict[str, Effect] = Field(default_factory=dict)
    default_effect: Effect = Effect.ALLOW


class ToolCallRequest(_Model):
    """One tool call, as a model asked for it, plus what the application wants enforced."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    policy: CapabilityPolicy | None = None
    approval_timeout: timedelta | None = DEFAULT_APPROVAL_TIMEOUT
    """How long to wait for a decision; ``None`` waits without a timer."""
    deadline: datetime | None = None
    """Absolute time by which the call must be done, approval wait included."""
    timeout: timedelta | None = None
    """Budget for the whole call from the workflow's start, approval wait included."""
    metadata: dict[str, str] = Field(default_factory=dict)
    task_queue: str | None = None
    """Task queue for the tool's activities; the deployment's choice when ``None``."""
    profile: str | None = None
    """A deployment profile (``[profiles.NAME]``): a tool outside it is denied at plan."""
    principal: Principal | None = None
    """Whom the call acts for (``toolcalls.workflows.models.principal``): a claim of whoever
    starts the call."""
    notify: str | None = Field(default=None, min_length=1, max_length=2_048)
    """A webhook of the deployment (``[[notifications.webhooks]]``, by name or URL) told, signed
    as every notification is, when the call ends (``finished``): for a caller that does not wait."""


class Verdict(_Model):
    """One policy's effect on one capability or tool, and the rule that gave it."""

    subject: str
    """A capability name, or ``tool:<name>`` for a ``tools`` entry."""
    effect: Effect
    rule: str
    """The matching rule key, ``tool:<name>``, or ``default``."""
    source: str
    """``deployment`` (the ceiling) or ``request``."""


class ActivityPlan(_Model):
    """Activity options for one call, fixed by the catalog at plan time."""

    task_queue: str | None
    start_to_close: timedelta
    schedule_to_start: timedelta
    heartbeat: timedelta | None
    maximum_attempts: int
    local: bool = False
    """Run as a local activity on the workflow worker (pure tools only)."""


class CallPlan(_Model):
    """What the plan step decided about a call; recorded in history so replay never re-plans."""

    tool: str
    arguments: dict[str, Any]
    capabilities: list[str]
    side_effect: SideEffect
    ceiling: list[Verdict]
    """The deployment ceiling's verdict on each capability (and on the tool, if it names it)."""
    digest: str
    activity: ActivityPlan | None
    """``None`` for a tool the workflow runs itself (``ask_user``)."""
    prepare: bool = False
    question_timeout: timedelta | None = None
    approval_rule: ApprovalRule | None = None
    webhooks: list[str] = Field(default_factory=list)
    """The deployment's webhooks (by name) told when the call waits for a human."""
    profile: str | None = None
    profile_digest: str | None = None
    """The profile's snapshot identity: a digest of its tools' definitions when planned."""
    visible_tools: list[str] | None = None
    """For a discovery tool: the tools this call may use (profile, policy and ceiling)."""
    principal: Principal | None = None
    policies: list[PolicyVerdict] = Field(default_factory=list)
    """Each ``[[policies]]`` set's decision on the call, made once here (replay never evaluates
    a policy again; a changed policy affects only new calls)."""
    quotas: list[QuotaCharge] = Field(default_factory=list)
    """The ``[[quotas]]`` the call is charged to, reserved before it may execute."""
    connection: str | None = None
    """The provider whose per-principal connection the tool acts through (``google``,
    ``microsoft``); the call's principal is then bound into its attestation."""
    consent: ConsentRequest | None = None
    """The principal had no connection when planned: the call waits for one."""


class PlanInput(_Model):
    tool: str
    arguments: dict[str, Any]
    task_queue: str | None = None
    profile: str | None = None
    policy: CapabilityPolicy | None = None
    """The request's policy: discovery tools show only what it and the ceiling allow."""
    call_id: str | None = None
    run: bool = False
    """Run an allowed pure tool inside the plan (one local activity for the whole call);
    ``ToolCallWorkflow`` asks for it, a parent planning for its budget does not."""
    inline: bool = False
    """Attest the plan for the calling workflow run, which runs the call itself (inline)."""
    principal: Principal | None = None
    parent: str | None = None
    """The parent workflow's id, for the policies' context."""


class PlanOutcome(_Model):
    plan: CallPlan | None = None
    error: ToolError | None = None
    ran: bool = False
    """The plan ran the tool (an allowed pure tool): ``output`` and ``run_error`` are its
    outcome, and no execute activity follows."""
    output: Any = None
    run_error: ToolError | None = None
    attestation: Attestation | None = None
    """The deployment's word on this plan, for the workflow run that asked for it: ``inline``
    for a workflow that runs the call itself, ``planned`` for ``ToolCallWorkflow``."""


class EventKind(StrEnum):
    PLANNED = "planned"
    POLICY_DENIED = "policy_denied"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_GRANTED = "approval_granted"
    APPROVAL_DENIED = "approval_denied"
    RESPONDED = "responded"
    """An approver answered in place of the tool (a "respond" decision)."""
    APPROVAL_TIMED_OUT = "approval_timed_out"
    QUESTION_ASKED = "question_asked"
    QUESTION_ANSWERED = "question_answered"
    QUESTION_DECLINED = "question_declined"
    QUESTION_TIMED_OUT = "question_timed_out"
    SIGNAL_IGNORED = "signal_ignored"
    APPROVAL_RECORDED = "approval_recorded"
    ARGUMENTS_EDITED = "arguments_edited"
    EDIT_REFUSED = "edit_refused"
    GRANT_CREATED = "grant_created"
    GRANT_USED = "grant_used"
    REMINDER = "reminder"
    ESCALATED = "escalated"
    NOTIFIED = "notified"
    NOTIFICATION_FAILED = "notification_failed"
    GRANT_LOOKUP_FAILED = "grant_lookup_failed"
    SHADOW_DISAGREED = "shadow_disagreed"
    QUOTA_RESERVED = "quota_reserved"
    QUOTA_EXCEEDED = "quota_exceeded"
    QUOTA_RELEASED = "quota_released"
    """A shadow policy set would have decided the call otherwise (not enforced)."""
    CONNECTION_REQUESTED = "connection_requested"
    CONNECTED = "connected"
    CONNECTION_TIMED_OUT = "connection_timed_out"
    STARTED = "started"
    CANCEL_REQUESTED = "cancel_requested"
    FINISHED = "finished"


class CallEvent(_Model):
    """One line of a call's event log, stamped with workflow time."""

    at: datetime
    kind: EventKind
    message: str = ""


class ToolCallResult(_Model):
    """The one result of a call, whatever happened."""

    workflow_id: str
    call_id: str
    tool: str
    status: CallStatus
    output: Any = None
    """The tool's typed result as JSON; partial output for a canceled process."""
    error: ToolError | None = None
    approval: ApprovalRecord | None = None
    """The decision that approved or denied the call (the last one, with several approvers)."""
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    """Every approval recorded for the digest that ran (two-person rule)."""
    edits: list[ArgumentEdit] = Field(default_factory=list)
    response: str | None = None
    """An approver's answer in place of the tool (``responded``): the model reads it as output."""
    digest: str | None = None
    profile: str | None = None
    profile_digest: str | None = None
    """The profile's snapshot identity when the call was planned: which definitions it saw."""
    capabilities: list[str] = Field(default_factory=list)
    principal: str | None = None
    """The id of whom the call acted for."""
    events: list[CallEvent] = Field(default_factory=list)
    started_at: datetime
    finished_at: datetime
    waited_seconds: float = 0.0
    """Time spent waiting for a human (approval or answer)."""
    run_seconds: float = 0.0
    """Time the tool's activity took, from scheduling to its result."""


class CallState(_Model):
    """The ``status`` query's answer: where the call is and what it waits for."""

    workflow_id: str
    call_id: str
    tool: str
    phase: Phase
    capabilities: list[str]
    pending_approval: ApprovalRequest | None
    pending_question: UserQuestion | None
    events: list[CallEvent]
    result: ToolCallResult | None
    principal: str | None = None
    """The id of whom the call acts for."""
    pending_connection: ConsentRequest | None = None
    """The account the call waits for its principal to connect, and where."""


class Notification(_Model):
    """What one webhook is told about a call that waits for a human (``NOTIFY_ACTIVITY``)."""

    kind: str
    """``waiting``, ``reminder``, ``escalated``, or ``finished`` (the call ended: ``status``)."""
    webhook: str
    workflow_id: str
    call_id: str
    tool: str
    capabilities: list[str]
    summary: str
    """The start of the preview."""
    approvers: list[str] | None
    """Who may decide; ``None``: anyone."""
    requested_at: datetime
    expires_at: datetime | None
    digest: str = ""
    visible_tools: list[str] | None = None
    attestation: Attestation | None = None
    """The plan's attestation of this call for the run that notifies: only ``ToolCallWorkflow``
    on the deployment's worker has one, so nothing else can post to the deployment's webhooks."""
    status: str | None = None
    """For ``finished``: the call's status (``completed``, ``canceled``...)."""
    error: str | None = None
    """For ``finished``: the error's code and message, if it ended with one."""


class ExecuteInput(_Model):
    """The input of every tool activity (``prepare`` and execute)."""

    tool: str
    arguments: dict[str, Any]
    digest: str
    call_id: str
    idempotency_key: str
    approval: ApprovalRecord | None = None
    precondition: dict[str, Any] | None = None
    visible_tools: list[str] | None = None
    """For a discovery tool: the tools this call may use, as its plan found them."""
    attestation: Attestation | None = None
    """The deployment's word that this run may run this call: its plan's, or once approved, the
    approval's (``toolcalls.workflows.models.attest``)."""
    principal: str | None = None
    """For a connection-backed tool only: whose connection it acts through (attested)."""
