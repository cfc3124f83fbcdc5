"""Workflows that call the deployment's activities directly, as an application's workflow might:
one that plans a call inline and then runs tool activities with whatever input the test gives.

Kept free of test-only imports: they run in the workflow sandbox like application code does.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from toolcalls.workflows.models.call import PLAN_ACTIVITY, ExecuteInput, PlanInput, PlanOutcome

ONE_ATTEMPT = RetryPolicy(maximum_attempts=1)


class Step(BaseModel):
    """Plan (``plan``) or run the tool activity ``activity`` with ``input``, on ``task_queue``."""

    task_queue: str
    plan: PlanInput | None = None
    activity: str = PLAN_ACTIVITY
    input: ExecuteInput | None = None
    attest: bool = False
    """Send the attestation of this run's last plan with ``input``."""


class Attempted(BaseModel):
    output: Any = None
    error_type: str | None = None
    message: str = ""


@workflow.defn
class DirectCaller:
    """Plans and runs the deployment's activities itself, step by step, as application code."""

    @workflow.run
    async def run(self, steps: list[Step]) -> list[Attempted]:
        results: list[Attempted] = []
        last: PlanOutcome | None = None
        for step in steps:
            if step.plan is not None:
                attempted = await _attempt(PLAN_ACTIVITY, step.task_queue, step.plan)
                last = PlanOutcome.model_validate(attempted.output)
                results.append(attempted)
                continue
            assert step.input is not None
            sent = step.input
            if step.attest:
                assert last is not None
                sent = sent.model_copy(update={"attestation": last.attestation})
            results.append(await _attempt(step.activity, step.task_queue, sent))
        return results


async def _attempt(name: str, task_queue: str, arg: BaseModel) -> Attempted:
    try:
        output = await workflow.execute_activity(
            name,
            arg,
            task_queue=task_queue,
            start_to_close_timeout=timedelta(seconds=20),
            schedule_to_start_timeout=timedelta(seconds=20),
            retry_policy=ONE_ATTEMPT,
        )
    except ActivityError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError):
            return Attempted(error_type=cause.type, message=cause.message)
        return Attempted(error_type=type(cause).__name__, message=str(cause))
    return Attempted(output=output)
