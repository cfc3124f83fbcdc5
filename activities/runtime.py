"""Turns the catalog into Temporal activities and guards every one of them.

``ToolRuntime`` owns the ``plan`` local activity and, for each tool this worker serves, an execute
activity named after the tool and, where the tool has one, a ``<tool>.prepare`` activity and a
``<tool>.reconcile`` activity (a read-only lookup of an uncertain call's effect, by the identity
the tool derives from the call's idempotency key). The execute and prepare activities re-check
what they must not take on trust: that the deployment attested this call for that very workflow
run (``toolcalls.activities.attestations``: a plan of ``ToolCallWorkflow`` or an inline
plan; a workflow's type name proves nothing), that the arguments are the ones planned (their
digest), that the deployment's ceiling allows the call and that any approval it requires is
present, bound to this digest and attested as ``ToolCallWorkflow``'s own decision (an inline call
never carries one: such calls run in ``ToolCallWorkflow``). Results are
checked against the tool's result model and the payload cap before they leave the worker: the
payload as the worker's converter and codec make it, against 1 MiB, or the deployment's ``[payloads]
max_result_bytes`` when large payloads are stored outside history.

How a tool's method is called and how its failures leave the activity is in
``toolcalls.activities.running``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.converter import PayloadCodec
from temporalio.exceptions import ApplicationError

from toolcalls.activities import telemetry
from toolcalls.activities.attestations import (
    Attestor,
    Claim,
    Run,
    by_deployment_workflow,
    refused,
    utc_now,
)
from toolcalls.activities.base import ToolArgs
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, call_digest
from toolcalls.activities.cedar.engine import PolicySet
from toolcalls.activities.cedar.judge import judged
from toolcalls.activities.connections import Connections
from toolcalls.activities.connections.planning import with_connection
from toolcalls.activities.definitions import DEFINITION_FORMATS
from toolcalls.activities.errors import invalid_arguments, tool_error
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES
from toolcalls.activities.quotas import QuotaSettings, charged
from toolcalls.activities.running import (
    ToolMethod,
    call_tool,
    expected_failures,
    failure_of,
    reconcile_activity,
)
from toolcalls.activities.spec import ToolSpec
from toolcalls.workflows.models.approval import Prepared
from toolcalls.workflows.models.attest import Attestation, AttestedDecision
from toolcalls.workflows.models.call import (
    DEFINITIONS_ACTIVITY,
    PLAN_ACTIVITY,
    WORKFLOW_NAME,
    CallPlan,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    ExecuteInput,
    PlanInput,
    PlanOutcome,
    SideEffect,
    prepare_activity_name,
)
from toolcalls.workflows.models.definitions import (
    Definitions,
    DefinitionsRequest,
)
from toolcalls.workflows.models.limits import CODEC_MARGIN_BYTES
from toolcalls.workflows.rules import policy
from toolcalls.workflows.rules.approvers import ApproversSettings

MAX_CEILING_DECISIONS = 4096
"""Ceiling decisions a worker keeps (one per tool and capability set it has run); a tool whose
capabilities depend on its arguments has a few sets, so this is never reached in practice."""
_APPROVALS = frozenset({AttestedDecision.APPROVED, AttestedDecision.GRANTED})
"""Decisions that carry an approval the deployment's ceiling may require."""


class ToolRuntime:
    """The activities of one worker: ``plan`` and the tools it serves."""

    def __init__(
        self,
        catalog: Catalog,
        ceiling: CapabilityPolicy | None = None,
        *,
        instances: Mapping[type, object] | None = None,
        approvers: ApproversSettings | None = None,
        webhooks: Sequence[str] = (),
        result_bytes: int = MAX_PAYLOAD_BYTES,
        codec: PayloadCodec | None = None,
        attestor: Attestor | None = None,
        policy_sets: Sequence[PolicySet] = (),
        quotas: Sequence[QuotaSettings] = (),
        connections: Connections | None = None,
    ) -> None:
        """``approvers`` and ``webhooks`` (names) go into every plan: who may decide a call, and
        whom to tell that it waits. ``result_bytes``: the most a result or preview may be,
        measured as its payload after the worker's converter and ``codec`` (the one its data
        converter applies). ``attestor``: the deployment's attestation keys; every worker of a
        deployment needs the same (without one, keys of this runtime's own)."""
        self.catalog = catalog
        self.ceiling = ceiling or default_ceiling()
        self._ceiling_decisions: dict[tuple[str, tuple[str, ...]], policy.Decision] = {}
        self._decided_for = self.ceiling
        self.approvers = approvers
        self.webhooks = tuple(webhooks)
        self._instances: dict[type, object] = dict(instances or {})
        self.result_bytes = result_bytes
        self.codec = codec
        self.attestor = attestor or Attestor.ephemeral()
        self.policy_sets = tuple(policy_sets)
        """The ``[[policies]]`` sets, loaded at start; their verdicts go into each plan."""
        self.quotas = tuple(quotas)
        """The ``[[quotas]]``; the ones a call is charged to go into its plan."""
        self.connections = connections
        """``[connections]``: the plan asks whether a call's principal has connected."""

    def _instance(self, spec: ToolSpec) -> object:
        assert spec.implementation is not None
        if spec.implementation not in self._instances:
            self._instances[spec.implementation] = spec.implementation()
        return self._instances[spec.implementation]

    def workflow_activities(self, local_tools: Iterable[str] = ()) -> list[Callable[..., Any]]:
        """``plan``, bound to the pure tools this worker also serves (they may run locally)."""
        local = frozenset(local_tools)

        @activity.defn(name=PLAN_ACTIVITY)
        async def plan(input: PlanInput) -> PlanOutcome:
            outcome, args = self.catalog.plan_call(
                input, self.ceiling, local, self.approvers, self.webhooks
            )
            outcome = judged(outcome, input, self.policy_sets, self.approvers)
            outcome = charged(outcome, input.principal, self.quotas)
            spec = self.catalog.get(outcome.plan.tool) if outcome.plan is not None else None
            provider = spec.connection if spec is not None else None
            outcome = await with_connection(outcome, input, provider, self.connections)
            if outcome.plan is not None:
                attestation = self._plan_attestation(input, outcome.plan)
                if attestation is not None:
                    outcome = outcome.model_copy(update={"attestation": attestation})
            if (
                input.run
                and outcome.plan is not None
                and args is not None
                and _runs_in_plan(outcome.plan, input)
            ):
                return await self._run_in_plan(outcome, args, input)
            return outcome

        @activity.defn(name=DEFINITIONS_ACTIVITY)
        async def definitions(request: DefinitionsRequest) -> Definitions:
            return self.definitions(request)

        return [plan, definitions, *self.attestor.activities()]

    def _plan_attestation(self, input: PlanInput, plan: CallPlan) -> Attestation | None:
        """The deployment's word on ``plan`` for the run that asked: ``inline`` for whoever asks
        for it, ``planned`` only for ``ToolCallWorkflow`` on this worker (a local activity)."""
        info = activity.info()
        run = Run.of(info)
        if run is None:
            return None
        if input.inline:
            decision = AttestedDecision.INLINE
        elif by_deployment_workflow(info):
            decision = AttestedDecision.PLANNED
        else:
            return None
        principal = plan.principal.id if plan.connection and plan.principal else None
        claim = Claim(
            input.call_id or "", plan.digest, plan.visible_tools, decision, principal=principal
        )
        return self.attestor.issue(run, claim)

    async def _run_in_plan(
        self, outcome: PlanOutcome, args: ToolArgs, input: PlanInput
    ) -> PlanOutcome:
        """Run an allowed pure tool inside the plan: the call needs no other activity.

        It runs here, in this worker, under the plan's options and the same checks of its result
        as an execute activity; ``args`` are the ones just validated and digested.
        """
        plan = outcome.plan
        assert plan is not None
        spec = self.catalog.get(plan.tool)
        assert spec is not None
        instance = self._instance(spec)
        execute = ExecuteInput(
            tool=plan.tool,
            arguments=plan.arguments,
            digest=plan.digest,
            call_id=input.call_id or "",
            idempotency_key="",
            visible_tools=plan.visible_tools,
        )
        try:
            with expected_failures(spec.name, execute):
                result = await call_tool(spec, getattr(instance, spec.name), args, execute)
                if not isinstance(result, spec.result):
                    raise tool_error(
                        ErrorCode.INTERNAL, f"{spec.name}: returned the wrong result type"
                    )
                await self._check_size(spec, "result", result)
        except ApplicationError as exc:
            error, partial = failure_of(spec.name, exc)
            return outcome.model_copy(update={"ran": True, "run_error": error, "output": partial})
        return outcome.model_copy(update={"ran": True, "output": result.model_dump(mode="json")})

    def definitions(self, request: DefinitionsRequest) -> Definitions:
        """A profile's definitions (or every enabled tool's) for a parent or an application."""
        profile = request.profile
        if profile is not None and profile not in self.catalog.settings.profiles:
            raise tool_error(ErrorCode.INVALID_ARGUMENTS, f"no profile {profile[:64]!r}")
        if request.format not in DEFINITION_FORMATS:
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"format {request.format[:16]!r}: one of {', '.join(DEFINITION_FORMATS)}",
            )
        return Definitions(
            profile=profile,
            digest=self.catalog.profile_digest(profile) if profile is not None else None,
            definitions=self.catalog.definitions(request.format, profile),
        )

    def tool_activities(self, names: Iterable[str] | None = None) -> list[Callable[..., Any]]:
        """Execute (and prepare) activities for ``names``, default every activity-backed tool."""
        chosen = self.catalog.names if names is None else list(names)
        result: list[Callable[..., Any]] = []
        for name in chosen:
            spec = self.catalog.get(name)
            if spec is None:
                raise ValueError(f"{name!r} is not an enabled tool")
            if spec.implementation is None:
                continue
            instance = self._instance(spec)
            result.append(self._execute_activity(spec, getattr(instance, spec.name)))
            if spec.has_prepare:
                prepare = getattr(instance, f"prepare_{spec.name}")
                result.append(self._prepare_activity(spec, prepare))
            lookup = getattr(instance, f"reconcile_{spec.name}", None)
            if lookup is not None:
                result.append(reconcile_activity(spec, lookup))
        return result

    def pure_tools(self) -> list[str]:
        """Names of enabled pure, activity-backed tools (candidates for local activities)."""
        return [
            s.name
            for s in self.catalog
            if s.side_effect is SideEffect.PURE and s.implementation is not None
        ]

    def _execute_activity(self, spec: ToolSpec, method: ToolMethod) -> Callable[..., Any]:
        @activity.defn(name=spec.name)
        async def execute(input: ExecuteInput) -> Any:
            with telemetry.measured(spec.name):
                return await run(input)

        async def run(input: ExecuteInput) -> Any:
            with expected_failures(spec.name, input):
                args = self._admit(spec, input, execute=True)
                result = await call_tool(spec, method, args, input)
            if not isinstance(result, spec.result):
                raise tool_error(ErrorCode.INTERNAL, f"{spec.name}: returned the wrong result type")
            with expected_failures(spec.name, input):
                payload = await self._check_size(spec, "result", result)
            telemetry.result_returned(spec.name, result)
            # The payload just measured is the one the SDK would make again from ``result``.
            return RawValue(payload)

        return execute

    def _prepare_activity(self, spec: ToolSpec, method: ToolMethod) -> Callable[..., Any]:
        @activity.defn(name=prepare_activity_name(spec.name))
        async def prepare(input: ExecuteInput) -> Any:
            with expected_failures(prepare_activity_name(spec.name), input):
                args = self._admit(spec, input, execute=False)
                prepared = await call_tool(spec, method, args, input)
            if not isinstance(prepared, Prepared):
                raise tool_error(ErrorCode.INTERNAL, f"{spec.name}: prepare returned no preview")
            # A preview (a diff of a large file, say) is a payload like any result; the one
            # measured is returned, as ``execute`` returns its result's.
            with expected_failures(prepare_activity_name(spec.name), input):
                payload = await self._check_size(spec, "preview", prepared)
            return RawValue(payload)

        return prepare

    async def _check_size(self, spec: ToolSpec, what: str, value: BaseModel) -> Payload:
        """The central payload cap: nothing over ``result_bytes`` leaves an activity. Returns
        ``value``'s payload as the worker's converter makes it (before its codec)."""
        payload = activity.payload_converter().to_payload(value)
        size = len(payload.data)
        # Encryption adds tens of bytes and compression only shrinks: the codec is worth running
        # twice only near the limit.
        if self.codec is not None and size > self.result_bytes - CODEC_MARGIN_BYTES:
            size = len((await self.codec.encode([payload]))[0].data)
        if size > self.result_bytes:
            telemetry.payload_refused(spec.name, what)
            raise tool_error(
                ErrorCode.OUTPUT_TOO_LARGE,
                f"{spec.name}: {what} is {size} bytes; the limit is {self.result_bytes}",
            )
        return payload

    def _ceiling_decision(self, tool: str, capabilities: Sequence[str]) -> policy.Decision:
        """The deployment ceiling's decision on ``tool`` needing ``capabilities``: a function of
        the two for a given (immutable) ceiling, so each pair is evaluated once per ceiling."""
        if self._decided_for is not self.ceiling:
            self._ceiling_decisions.clear()
            self._decided_for = self.ceiling
        key = (tool, tuple(capabilities))
        decision = self._ceiling_decisions.get(key)
        if decision is None:
            if len(self._ceiling_decisions) >= MAX_CEILING_DECISIONS:
                self._ceiling_decisions.clear()
            ceiling = policy.evaluate(self.ceiling, tool, capabilities, policy.DEPLOYMENT)
            decision = policy.decide(ceiling, None, tool, capabilities)
            self._ceiling_decisions[key] = decision
        return decision

    def _admit(self, spec: ToolSpec, input: ExecuteInput, *, execute: bool) -> ToolArgs:
        """The validated arguments, once the call is shown to be the one planned and allowed."""
        attestation = input.attestation
        problem = self.attestor.problem(
            Run.of(activity.info()),
            attestation,
            Claim(input.call_id, input.digest, input.visible_tools, principal=input.principal),
            utc_now(),
        )
        if problem is None and attestation is not None and not runs_tools(attestation.decision):
            problem = f"its attestation is of a {attestation.decision.value}, not of a call"
        if problem is not None or attestation is None:
            raise refused(f"{spec.name}: the deployment did not plan this call: {problem}")
        inline = attestation.decision is AttestedDecision.INLINE
        if spec.connection is not None and input.principal is None:
            raise tool_error(
                ErrorCode.CONNECTION_REQUIRED,
                f"{spec.name}: acts with each principal's own {spec.connection} account: the "
                "call names no principal",
            )
        try:
            args = spec.arguments.model_validate(input.arguments)
        except ValidationError as exc:
            error = invalid_arguments(spec.name, exc)
            raise tool_error(error.code, error.message, fixable_args=error.fixable_args) from None
        if (
            input.tool != spec.name
            or call_digest(spec.name, args.model_dump(mode="json")) != input.digest
        ):
            raise tool_error(
                ErrorCode.POLICY_DENIED, f"{spec.name}: arguments do not match the call's digest"
            )
        decision = self._ceiling_decision(spec.name, spec.capabilities_for(args))
        if decision.effect is Effect.DENY:
            raise tool_error(
                ErrorCode.POLICY_DENIED,
                f"{spec.name}: denied by the deployment: {'; '.join(decision.reasons())}",
            )
        if inline and decision.effect is Effect.REQUIRE_APPROVAL:
            # The approval would come from the caller's own code: the deployment's approvals are
            # enforced by its own workflow only.
            raise tool_error(
                ErrorCode.POLICY_DENIED,
                f"{spec.name}: the deployment requires an approval for this call "
                f"({'; '.join(decision.reasons())}), which only {WORKFLOW_NAME} records",
            )
        if execute and decision.effect is Effect.REQUIRE_APPROVAL:
            approval = input.approval
            if (
                approval is None
                or not approval.approved
                or approval.digest != input.digest
                or attestation.decision not in _APPROVALS
                or attestation.approver != approval.approver
            ):
                raise tool_error(
                    ErrorCode.POLICY_DENIED,
                    f"{spec.name}: the deployment requires an approval for this call "
                    f"({'; '.join(decision.reasons())})",
                )
        return args


def runs_tools(decision: AttestedDecision) -> bool:
    """Whether an attestation of ``decision`` lets a tool activity run (a grant's does not)."""
    return decision is not AttestedDecision.GRANT


def _runs_in_plan(plan: CallPlan, input: PlanInput) -> bool:
    """An allowed pure tool the workflow worker runs locally: the plan can run it at once."""
    if plan.activity is None or not plan.activity.local or plan.side_effect is not SideEffect.PURE:
        return False
    if plan.quotas:
        return False  # its units are reserved by the workflow before it may run
    decision = policy.decide_plan(plan, input.policy)
    return decision.effect is Effect.ALLOW
