"""Requests no Python client would send: raw JSON with NaN, or nested past the decoder's limit."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RawValue

from tests.support.harness import make_config, running_worker
from toolcalls.workflows.models.call import WORKFLOW_NAME, CallStatus, ErrorCode, ToolCallResult


def raw_request(text: str) -> RawValue:
    return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=text.encode()))


async def test_non_finite_numbers_are_refused_not_nulled(client: Client, task_queue: str) -> None:
    text = '{"tool": "probe_echo", "arguments": {"text": "x", "size": NaN, "extra": [1, Infinity]}}'
    async with running_worker(client, make_config(task_queue)) as probes:
        result = await client.execute_workflow(
            WORKFLOW_NAME,
            raw_request(text),
            id=f"raw-{uuid.uuid4()}",
            task_queue=task_queue,
            result_type=ToolCallResult,
        )
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == ["size", "extra"]
    assert "finite" in result.error.message
    assert probes.runs == {}


async def test_undecodable_request_fails_the_workflow_at_once(
    client: Client, task_queue: str
) -> None:
    deep = "[" * 5_000 + "]" * 5_000
    text = json.dumps({"tool": "probe_echo", "arguments": {}})[:-2] + f'"text": {deep}}}}}'
    async with running_worker(client, make_config(task_queue)):
        handle = await client.start_workflow(
            WORKFLOW_NAME, raw_request(text), id=f"raw-{uuid.uuid4()}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await asyncio.wait_for(handle.result(), 30)
    assert "recursion" in str(failure.value.cause).lower()
