"""A parent workflow, as an application would write one, that runs calls through ``ToolCalls``.

Kept free of test-only imports: it runs in the workflow sandbox like application code does.
"""

from __future__ import annotations

import functools
from datetime import timedelta

from pydantic import BaseModel, Field
from temporalio import workflow

from toolcalls.workflows.models.call import (
    CapabilityPolicy,
    ToolCallRequest,
    ToolCallResult,
)
from toolcalls.workflows.models.definitions import (
    Definitions,
)
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.reach.parent import BudgetUsage, CallBudget, ToolCalls


class ParentInput(BaseModel):
    task_queue: str
    batches: list[list[ToolCallRequest]]
    """Each batch runs in parallel; batches run one after another."""
    budget: CallBudget = Field(default_factory=CallBudget)
    policy: CapabilityPolicy | None = None
    approval_timeout: timedelta | None = timedelta(hours=24)
    inline: bool = False
    """Run the calls inside the parent (``ToolCalls(inline=True)``)."""
    principal: Principal | None = None
    """Whom every call acts for (``ToolCalls(principal=...)``)."""


class ParentOutput(BaseModel):
    results: list[ToolCallResult]
    usage: BudgetUsage


@workflow.defn
class AgentParent:
    """Runs the model's tool calls batch by batch, sharing one budget."""

    @workflow.run
    async def run(self, input: ParentInput) -> ParentOutput:
        tools = ToolCalls(
            task_queue=input.task_queue,
            policy=input.policy,
            approval_timeout=input.approval_timeout,
            budget=input.budget,
            inline=input.inline,
            principal=input.principal,
        )
        results: list[ToolCallResult] = []
        for batch in input.batches:
            if len(batch) == 1:
                results.append(await tools.call(batch[0]))
            else:
                results += await tools.call_many(batch)
        return ParentOutput(results=results, usage=tools.usage)


class OversizedInput(BaseModel):
    task_queue: str
    size: int
    """Characters of the ``probe_echo`` text the parent makes up (its own input stays small)."""


@workflow.defn
class OversizedParent:
    """Calls ``probe_echo`` with a text of ``size`` characters, then with a small one."""

    @workflow.run
    async def run(self, input: OversizedInput) -> list[ToolCallResult]:
        tools = ToolCalls(task_queue=input.task_queue)
        big = await tools.call("probe_echo", {"text": "x" * input.size}, call_id="big")
        small = await tools.call("probe_echo", {"text": "small"}, call_id="small")
        return [big, small]


@workflow.defn
class StepParent:
    """Makes its calls one at a time, each after a ``proceed`` signal but the first."""

    def __init__(self) -> None:
        self._allowed = 1

    @workflow.run
    async def run(self, input: ParentInput) -> ParentOutput:
        tools = ToolCalls(task_queue=input.task_queue)
        results: list[ToolCallResult] = []
        for index, batch in enumerate(input.batches):
            await workflow.wait_condition(functools.partial(self._may, index))
            results.append(await tools.call(batch[0]))
        return ParentOutput(results=results, usage=tools.usage)

    def _may(self, index: int) -> bool:
        return index < self._allowed

    @workflow.signal
    def proceed(self) -> None:
        self._allowed += 1


class DefinitionsInput(BaseModel):
    task_queue: str
    profile: str | None = None
    format: str = "anthropic"


@workflow.defn
class DefinitionsParent:
    """Asks the deployment for its profile's definitions, as an agent loop's first step would."""

    @workflow.run
    async def run(self, input: DefinitionsInput) -> Definitions:
        tools = ToolCalls(task_queue=input.task_queue, profile=input.profile)
        return await tools.definitions(format=input.format)
