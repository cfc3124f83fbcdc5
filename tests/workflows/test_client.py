"""``ToolCallClient``: its converter, ``start``, ``call``, ``pending`` and ``status``.

Deciding and answering through it are in ``test_client_decide.py``.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import uuid
from datetime import timedelta

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter, DefaultPayloadConverter
from temporalio.service import RPCError, RPCStatusCode

from tests.support.client import (
    ASK,
    listed_pending,
    new_call_id,
    question_request,
    unlisted_pending,
    write_request,
)
from tests.support.harness import (
    Handle,
    listed,
    make_config,
    pending_approval,
    running_worker,
    start_call,
)
from tests.support.payloads import ZLIB, ZlibCodec
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    SEARCH_STATUS,
    SEARCH_TOOL,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    EventKind,
    Phase,
    ToolCallRequest,
)
from toolcalls.workflows.models.limits import PAYLOAD_LIMIT_BYTES, encoded_size
from toolcalls.workflows.reach.client import (
    CallConflict,
    Delivery,
    PageTokenError,
    PayloadTooLarge,
    ToolCallClient,
)
from toolcalls.workflows.reach.keyless import KeylessCodec
from toolcalls.workflows.reach.pending import PAGE_TOKEN_TAG

PROBE = timedelta(seconds=2)


def calc(expression: str = "6 * 7") -> ToolCallRequest:
    return ToolCallRequest(
        tool="calculator", arguments={"expression": expression}, call_id=new_call_id()
    )


async def test_a_plain_client_gets_the_pydantic_converter(client: Client, task_queue: str) -> None:
    plain = Client(client.service_client, namespace=client.namespace)
    assert plain.data_converter.payload_converter_class is DefaultPayloadConverter
    tools = ToolCallClient(plain, task_queue=task_queue)
    assert tools.client is not plain
    assert tools.client.data_converter.payload_converter_class is PydanticPayloadConverter
    assert plain.data_converter.payload_converter_class is DefaultPayloadConverter
    # Without a codec of its own, a client gets the one that refuses an encrypted payload with
    # a typed error; a client that has what it needs is used as it is.
    keyless = ToolCallClient(client).client
    assert keyless.data_converter.payload_converter_class is PydanticPayloadConverter
    assert isinstance(keyless.data_converter.payload_codec, KeylessCodec)
    assert ToolCallClient(keyless).client is keyless
    address = client.service_client.config.target_host
    connected = await ToolCallClient.connect(address, task_queue=task_queue)
    assert connected.client.data_converter.payload_converter_class is PydanticPayloadConverter
    assert isinstance(connected.client.data_converter.payload_codec, KeylessCodec)

    async with running_worker(client, make_config(task_queue)):
        request = calc()
        result = await asyncio.wait_for(tools.call(request), 30)
        again = await asyncio.wait_for(connected.call(calc("2 ** 10")), 30)
    assert again.output["result"] == 1024
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "6 * 7", "result": 42}
    assert (result.workflow_id, result.call_id) == (f"toolcall-{request.call_id}", request.call_id)


async def test_the_swapped_converter_keeps_the_clients_codec(
    client: Client, task_queue: str
) -> None:
    codec = ZlibCodec()
    worker_config = client.config()
    worker_config["data_converter"] = dataclasses.replace(
        pydantic_data_converter, payload_codec=codec
    )
    worker_client = Client(**worker_config)
    tools = ToolCallClient(
        Client(
            client.service_client,
            namespace=client.namespace,
            data_converter=DataConverter(payload_codec=codec),
        ),
        task_queue=task_queue,
        probe_timeout=PROBE,
    )
    assert tools.client.data_converter.payload_codec is codec

    async with running_worker(worker_client, make_config(task_queue)):
        handle = await tools.start(write_request("secret"))
        # The memo is encoded with the codec too: pending() can only read it through it.
        found = await listed_pending(tools, handle.id)
        approval = found[handle.id].approval
        assert approval is not None
        assert approval.arguments == {"token": "secret"}
        assert (await tools.approve(handle.id, approver="alice")).delivery is Delivery.ACCEPTED
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.output["approved_by"] == "alice"
    history = await handle.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert [p.metadata["encoding"] for p in started.input.payloads] == [ZLIB]


async def test_start_is_visible_at_once_and_runs_when_a_worker_comes(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue)
    request = calc("1 + 2")
    handle = await tools.start(request)
    assert handle.id == f"toolcall-{request.call_id}"
    description = await handle.describe()
    assert description.task_queue == task_queue
    assert description.typed_search_attributes.get(SEARCH_STATUS) == "planning"
    assert description.typed_search_attributes.get(SEARCH_TOOL) == "calculator"
    # No worker has touched it, yet a visibility query already finds it.
    await listed(client, 'ToolCallStatus="planning" AND ToolName="calculator"', handle.id)
    # Started again (a retrying client), it is the same call.
    again = await tools.start_or_join(request)
    assert (again.handle.id, again.existing, again.running) == (handle.id, True, True)

    anonymous = await tools.start(ToolCallRequest(tool="calculator", arguments={"expression": "2"}))
    assert anonymous.id.startswith("toolcall-")
    uuid.UUID(anonymous.id.removeprefix("toolcall-"))
    chosen_id = f"mine-{uuid.uuid4()}"
    chosen = await tools.start(calc("3"), workflow_id=chosen_id)
    assert chosen.id == chosen_id

    async with running_worker(client, make_config(task_queue)):
        results = await asyncio.wait_for(
            asyncio.gather(handle.result(), anonymous.result(), chosen.result()), 30
        )
    assert [r.output["result"] for r in results] == [3, 2, 3]
    assert [r.workflow_id for r in results] == [handle.id, anonymous.id, chosen_id]
    # Without a call id the workflow id stands in for it.
    assert [r.call_id for r in results] == [request.call_id, anonymous.id, results[2].call_id]
    await listed(client, 'ToolCallStatus="completed" AND ToolName="calculator"', handle.id)


async def test_call_returns_every_outcome_as_a_result(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue)
    deny_writes = CapabilityPolicy(rules={"filesystem.write": Effect.DENY})
    assert not await tools.worker_serving(task_queue)
    async with running_worker(client, make_config(task_queue)) as probes:
        done, denied = await asyncio.wait_for(
            asyncio.gather(tools.call(calc()), tools.call(write_request("x", policy=deny_writes))),
            30,
        )
        assert await tools.worker_serving(task_queue)
    assert done.status is CallStatus.COMPLETED
    assert done.output["result"] == 42
    assert denied.status is CallStatus.DENIED
    assert denied.error is not None
    assert denied.error.code is ErrorCode.POLICY_DENIED
    assert probes.runs == {}


async def test_pending_lists_what_a_ui_needs_with_and_without_a_worker(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    config = make_config(task_queue)
    async with running_worker(client, config) as probes:
        write = await tools.start(write_request("alpha", approval_timeout=timedelta(minutes=10)))
        ask = await tools.start(question_request())
        live = await listed_pending(tools, write.id, ask.id)
        view = await tools.status(write.id)
        assert view.live

    approval = live[write.id]
    assert (approval.tool, approval.capabilities) == ("probe_write", ["filesystem.write"])
    assert approval.phase is Phase.AWAITING_APPROVAL
    assert approval.question is None
    assert approval.approval is not None
    assert approval.approval == view.state.pending_approval
    assert approval.approval.arguments == {"token": "alpha"}
    assert approval.approval.capabilities == ["filesystem.write"]
    assert [(a.kind, a.text) for a in approval.approval.preview] == [("diff", "+alpha\n")]
    assert approval.expires_at == approval.approval.requested_at + timedelta(minutes=10)
    assert approval.started_at <= approval.approval.requested_at

    question = live[ask.id]
    assert (question.tool, question.capabilities) == ("ask_user", ["user.interact"])
    assert question.phase is Phase.AWAITING_ANSWER
    assert question.approval is None
    assert question.question is not None
    assert question.question.question == ASK["question"]
    assert question.question.options == ["JSON", "CSV"]
    assert question.expires_at == question.question.asked_at + timedelta(seconds=300)

    # The worker is gone: the same list, from visibility alone, newest first.
    assert await listed_pending(tools, write.id, ask.id) == live
    ours = [p.workflow_id for p in await tools.pending() if p.workflow_id in (write.id, ask.id)]
    assert ours == [ask.id, write.id]
    assert [p.workflow_id for p in await tools.pending(limit=1)] == [ask.id]

    async with running_worker(client, config, probes):
        assert (await tools.approve(write.id)).delivery is Delivery.ACCEPTED
        await unlisted_pending(tools, write.id)
        assert ask.id in [p.workflow_id for p in await tools.pending()]
        assert (await tools.answer(ask.id, "JSON")).delivery is Delivery.ACCEPTED
        await unlisted_pending(tools, ask.id)
        results = await asyncio.wait_for(asyncio.gather(write.result(), ask.result()), 30)
    assert [r.status for r in results] == [CallStatus.COMPLETED] * 2
    assert probes.runs == {"probe_write": 1}


async def test_status_live_from_history_and_finished(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    config = make_config(task_queue)
    request = write_request("beta")
    async with running_worker(client, config):
        handle = await tools.start(request)
        await listed_pending(tools, handle.id)
        live = await tools.status(handle.id)
    assert (live.live, live.running, live.history_events) == (True, True, [])
    assert (live.state.call_id, live.state.phase) == (request.call_id, Phase.AWAITING_APPROVAL)
    assert [e.kind for e in live.state.events] == [
        EventKind.PLANNED,
        EventKind.APPROVAL_REQUESTED,
    ]
    pending = live.state.pending_approval
    assert pending is not None

    stored = await tools.status(handle.id)
    assert (stored.live, stored.running) == (False, True)
    assert stored.state.phase is Phase.AWAITING_APPROVAL
    assert stored.state.pending_approval == pending
    assert (stored.state.workflow_id, stored.state.call_id) == (handle.id, request.call_id)
    assert (stored.state.tool, stored.state.capabilities) == ("probe_write", ["filesystem.write"])
    assert stored.state.result is None
    assert stored.history_events[0] == "WORKFLOW_EXECUTION_STARTED"
    assert "MARKER_RECORDED" in stored.history_events  # the plan, a local activity
    assert "ACTIVITY_TASK_COMPLETED" in stored.history_events  # the prepare step

    async with running_worker(client, config):
        await tools.approve(handle.id, approver="alice")
        result = await asyncio.wait_for(handle.result(), 30)
    done = await tools.status(handle.id)
    assert (done.live, done.running) == (False, False)
    assert done.state.phase is Phase.DONE
    assert done.state.result == result
    assert done.state.events == result.events
    assert done.state.pending_approval is None
    assert result.status is CallStatus.COMPLETED


async def test_status_of_a_terminated_call_shows_nothing_pending(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    async with running_worker(client, make_config(task_queue)):
        handle = await tools.start(write_request("gamma"))
        await listed_pending(tools, handle.id)
    await handle.terminate(reason="operator")
    view = await tools.status(handle.id)
    assert (view.live, view.running) == (False, False)
    assert view.state.phase is Phase.DONE
    assert view.state.pending_approval is None
    assert view.history_events[-1] == "WORKFLOW_EXECUTION_TERMINATED"
    await unlisted_pending(tools, handle.id)


async def test_a_call_id_runs_once_and_a_repeated_start_returns_that_call(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue, probe_timeout=PROBE)
    request = calc("6 * 7")
    async with running_worker(client, make_config(task_queue)) as probes:
        first = await tools.start_or_join(request)
        assert (first.existing, first.running) == (False, True)
        result = await asyncio.wait_for(first.handle.result(), 30)
        run_id = (await first.handle.describe()).run_id

        # A finished call gives its recorded result and starts nothing.
        again = await tools.start_or_join(request)
        assert (again.handle.id, again.existing, again.running) == (first.handle.id, True, False)
        assert await again.handle.result() == result
        assert await asyncio.wait_for(tools.call(request), 30) == result
        assert (await tools.handle(first.handle.id).describe()).run_id == run_id

        # A running one is joined.
        write = write_request("once")
        waiting = await tools.start_or_join(write)
        await listed_pending(tools, waiting.handle.id)
        joined = await tools.start_or_join(write)
        assert (joined.handle.id, joined.existing, joined.running) == (
            waiting.handle.id,
            True,
            True,
        )
        await tools.approve(waiting.handle.id, approver="alice")
        written = await asyncio.wait_for(joined.handle.result(), 30)
    assert written.status is CallStatus.COMPLETED
    assert probes.runs == {"probe_write": 1}

    # The id of another call (other arguments, another workflow) is not reused either.
    with pytest.raises(CallConflict, match="is already a call of calculator with other arguments"):
        await tools.start(calc("1"), workflow_id=first.handle.id)
    assert (await tools.handle(first.handle.id).describe()).run_id == run_id


async def test_a_request_too_large_for_temporal_is_refused_before_it_starts(
    client: Client, task_queue: str
) -> None:
    tools = ToolCallClient(client, task_queue=task_queue)
    text = "x" * (3 * 1024 * 1024)
    request = ToolCallRequest(tool="probe_echo", arguments={"text": text}, call_id=new_call_id())
    with pytest.raises(PayloadTooLarge) as raised:
        await tools.start(request)
    message = str(raised.value)
    assert message.startswith("probe_echo: the request is ")
    assert f"bytes encoded; the limit is {PAYLOAD_LIMIT_BYTES} bytes: shrink 'text' (" in message
    assert raised.value.fixable_args == ["text"]
    with pytest.raises(RPCError) as missing:
        await tools.handle(f"toolcall-{request.call_id}").describe()
    assert missing.value.status is RPCStatusCode.NOT_FOUND

    # The size is the encoded one, codec included: compressed, the same request fits.
    zipped = ToolCallClient(
        Client(
            client.service_client,
            namespace=client.namespace,
            data_converter=DataConverter(payload_codec=ZlibCodec()),
        ),
        task_queue=task_queue,
    )
    handle = await zipped.start(request)
    history = await handle.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.input.ByteSize() < 100_000
    await handle.terminate("only its start mattered")


async def test_the_limit_is_temporals_to_the_byte(client: Client, task_queue: str) -> None:
    tools = ToolCallClient(client, task_queue=task_queue)

    def echo(length: int) -> ToolCallRequest:
        return ToolCallRequest(tool="probe_echo", arguments={"text": "x" * length})

    async def size(request: ToolCallRequest) -> int:
        return encoded_size(await client.data_converter.encode([request]))

    length = PAYLOAD_LIMIT_BYTES - await size(echo(0))
    while await size(echo(length)) > PAYLOAD_LIMIT_BYTES:
        length -= 1
    assert await size(echo(length)) == PAYLOAD_LIMIT_BYTES
    at_limit = await tools.start(echo(length), workflow_id=f"limit-{uuid.uuid4()}")
    await at_limit.terminate("only its start mattered")
    over = echo(length + 1)
    with pytest.raises(PayloadTooLarge):
        await tools.start(over)
    # Temporal itself refuses that one byte more.
    with pytest.raises(RPCError, match="size exceeds limit"):
        await client.start_workflow(
            ToolCallWorkflow.run, over, id=f"over-{uuid.uuid4()}", task_queue=task_queue
        )


async def waiting_writes(client: Client, task_queue: str, prefix: str, count: int) -> list[Handle]:
    """``count`` ``probe_write`` calls, each waiting for its approval."""
    handles = [
        await start_call(client, task_queue, "probe_write", {"token": f"{prefix}-{n}"})
        for n in range(count)
    ]
    for handle in handles:
        await pending_approval(handle)
    return handles


async def test_pending_pages_with_a_token_and_counts_every_waiting_call(
    client: Client, task_queue: str
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, make_config(task_queue)):
        handles = await waiting_writes(client, task_queue, "page", 5)
        mine = {handle.id for handle in handles}
        await listed_pending(calls, *mine)
        seen: list[str] = []
        token: str | None = None
        pages = 0
        while True:
            page = await calls.pending_page(page_size=2, page_token=token)
            pages += 1
            assert len(page.calls) <= 2
            assert page.total >= len(mine)
            seen += [call.workflow_id for call in page.calls]
            token = page.next_page_token
            if token is None:
                break
        assert pages >= 3
        assert sorted(w for w in seen if w in mine) == sorted(mine)
        assert len(seen) == len(set(seen))
        for handle in handles:
            await handle.terminate("test over")
    with pytest.raises(ValueError, match="page_size must be 1-1000"):
        await calls.pending_page(page_size=0)


async def test_later_pages_carry_the_total_counted_for_the_first(
    client: Client, task_queue: str
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, make_config(task_queue)):
        handles = await waiting_writes(client, task_queue, "carry", 2)
        for _ in range(100):  # visibility is eventually consistent
            first = await calls.pending_page(page_size=1)
            if first.total >= len(handles) and first.next_page_token:
                break
            await asyncio.sleep(0.1)
        assert first.next_page_token is not None
        for handle in handles:
            await handle.terminate("test over")
        # Counted again, the total would fall as the terminated calls leave visibility.
        second = await calls.pending_page(page_size=1, page_token=first.next_page_token)
        assert second.total == first.total
    with pytest.raises(PageTokenError, match="not a token a previous page gave"):
        await calls.pending_page(
            page_token=base64.urlsafe_b64encode(PAGE_TOKEN_TAG + b"x:").decode()
        )
